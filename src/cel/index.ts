// CEL for configuration expressions: compile once at load (typed, positioned errors), evaluate under a cost and time limit.
export { compileCel, compileCondition, conditionsHold, celCompileError, celValue, plainCel, DEFAULT_CEL_LIMITS, MAX_EXPRESSION_LENGTH, type CelLimits, type CelProgram, type CelResult } from "./compile.js";
export { CEL_VARIABLE_SETS, UNAVAILABLE_VARIABLES, type CelVariableSet } from "./library.js";
