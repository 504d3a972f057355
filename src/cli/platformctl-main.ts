// The `platformctl` program: the API client for people (get, describe, create, apply, patch, certificates).
import { flagTable } from "./ctl/argv.js";
import { buildCtlProgram, runCtl } from "./ctl/root.js";
import { endQuietlyOnClosedPipe } from "./program.js";
import { ctlVerbsFor } from "./ctl/verbs.js";

endQuietlyOnClosedPipe();
// The global flags alone tell where the verb is; only that verb's module is loaded.
const verbs = await ctlVerbsFor(process.argv.slice(2), flagTable(buildCtlProgram([], () => undefined)));
process.exitCode = await runCtl(verbs, process.argv);
