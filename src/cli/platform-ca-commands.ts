// The `platform-ca` program with every command: offline signing, the dev PKI, the API server and the controllers.
import { buildProgram, endQuietlyOnClosedPipe, modulesFor, runProgram, type LazyModules } from "./program.js";
import { VERSION } from "../version.js";

/**
 * Each subcommand module, by the command it adds (one entry per module, in the order help lists them). Loaded on
 * demand: `platform-ca sign` loads the sign module alone, not the API server, the controllers or their packages.
 */
const modules: LazyModules = [
  ["apiserver", async () => (await import("./commands/apiserver.js")).apiserverCommand],
  ["dev-certs", async () => (await import("./commands/dev-certs.js")).devCertsCommand],
  ["sign", async () => (await import("./commands/sign.js")).signCommand],
  ["up", async () => (await import("./commands/up.js")).upCommand],
  ["controller", async () => (await import("./commands/controller.js")).controllerCommand],
  ["credential", async () => (await import("./commands/credential.js")).credentialCommand],
  ["hsm", async () => (await import("./commands/hsm.js")).hsmCommand],
  ["storage", async () => (await import("./commands/storage.js")).storageCommand],
  ["token", async () => (await import("./commands/token.js")).tokenCommand],
  ["join", async () => (await import("./commands/join.js")).joinCommand],
  ["completion", async () => (await import("./completion.js")).completionCommand({ dynamic: false })],
];

const loaded = await modulesFor(modules, process.argv[2], new Set(["completion"]));

const program = buildProgram("platform-ca", VERSION, loaded).addHelpText(
  "after",
  "\nExamples:\n  platform-ca up\n  platform-ca dev-certs issue localhost 127.0.0.1\n  source <(platform-ca completion bash)\n",
);
endQuietlyOnClosedPipe();
const code = await runProgram(program, process.argv);
process.exitCode = code;
