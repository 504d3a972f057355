#!/usr/bin/env node
// Entry point of the `platform-ca` command: `sign` from its one-file bundle, every other command from its own modules.
import { existsSync } from "node:fs";

/**
 * `platform-ca sign` one shot is mostly Node's start and its module loader: the build bundles the command into one
 * file (sign.bundle.js, from sign-entry.js), which starts ~10 ms sooner than its ~60 modules (docs/benchmarks.md, cli).
 * Without the bundle (a build by tsc alone) the same program runs from its modules.
 */
const bundle = new URL("./sign.bundle.js", import.meta.url);
if (process.argv[2] === "sign") await import(existsSync(bundle) ? bundle.href : "./sign-entry.js");
else await import("./platform-ca-commands.js");
