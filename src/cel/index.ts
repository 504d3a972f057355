// CEL for configuration expressions: compile once at load (typed, positioned errors), evaluate under a cost and time limit.
export { compileCel, celCompileError, celValue, plainCel, DEFAULT_CEL_LIMITS, MAX_EXPRESSION_LENGTH, type CelLimits, type CelProgram, type CelResult } from "./compile.js";
export { CEL_VARIABLE_SETS, type CelVariableSet } from "./library.js";
