#!/usr/bin/env node
// Entry point of the `platform-ca` command: `sign` from its one-file bundle, `--version` at once, every other command
// from its own modules.
import { existsSync } from "node:fs";

/**
 * `platform-ca sign` one shot is mostly Node's start and its module loader: the build bundles the command into one
 * file (sign.bundle.js, from sign-entry.js), which starts ~10 ms sooner than its ~60 modules (docs/benchmarks.md, cli).
 * Without the bundle (a build by tsc alone) the same program runs from its modules.
 */
const bundle = new URL("./sign.bundle.js", import.meta.url);
const word = process.argv[2];
if (word === "sign") await import(existsSync(bundle) ? bundle.href : "./sign-entry.js");
// `--version` alone is answered without the command-line parser, as commander prints it.
else if (process.argv.length === 3 && (word === "--version" || word === "-V")) process.stdout.write(`${(await import("../version.js")).VERSION}\n`);
else await import("./platform-ca-commands.js");
