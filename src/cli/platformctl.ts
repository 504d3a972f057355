#!/usr/bin/env node
// Entry point of the `platformctl` command: the program from its one-file bundle when built, else from its modules.
import { existsSync } from "node:fs";

/**
 * A command line is mostly Node's start and its module loader: the build bundles the program into one file
 * (platformctl.bundle.js, from platformctl-main.js; each verb still initialised only when used), which starts ~30 ms
 * sooner than the modules (docs/benchmarks.md, cli). A build by tsc alone runs the modules.
 */
const bundle = new URL("./platformctl.bundle.js", import.meta.url);
await import(existsSync(bundle) ? bundle.href : "./platformctl-main.js");
