#!/usr/bin/env node
// Entry point of the `platformctl` command: the API client for people (get, describe, create, apply, patch, certificates).
import { runCtl } from "./ctl/root.js";
import { endQuietlyOnClosedPipe } from "./program.js";
import { CTL_VERBS } from "./ctl/verbs.js";

endQuietlyOnClosedPipe();
process.exitCode = await runCtl(CTL_VERBS, process.argv);
