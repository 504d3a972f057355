// `platform-ca sign` as a program of its own: what the build bundles into sign.bundle.js for a fast one-shot start.
import { buildProgram, endQuietlyOnClosedPipe, runProgram } from "./program.js";
import { signCommand } from "./commands/sign.js";
import { VERSION } from "../version.js";

endQuietlyOnClosedPipe();
process.exitCode = await runProgram(buildProgram("platform-ca", VERSION, [signCommand]), process.argv);
