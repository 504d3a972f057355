#!/usr/bin/env node
// Entry point of the `platform-ca` command: offline signing, the dev PKI, the API server and the controllers.
import { buildProgram, endQuietlyOnClosedPipe, runProgram, type CommandModule } from "./program.js";
import { VERSION } from "../version.js";
import { devCertsCommand } from "./commands/dev-certs.js";
import { signCommand } from "./commands/sign.js";
import { apiserverCommand } from "./commands/apiserver.js";
import { upCommand } from "./commands/up.js";
import { controllerCommand } from "./commands/controller.js";
import { credentialCommand } from "./commands/credential.js";
import { completionCommand } from "./completion.js";
import { hsmCommand } from "./commands/hsm.js";
import { storageCommand } from "./commands/storage.js";

// Each subcommand module adds itself here (one import + one list entry per module).
const modules: CommandModule[] = [apiserverCommand, devCertsCommand, signCommand, upCommand, controllerCommand, credentialCommand, hsmCommand, storageCommand, completionCommand({ dynamic: false })];

const program = buildProgram("platform-ca", VERSION, modules).addHelpText(
  "after",
  "\nExamples:\n  platform-ca up\n  platform-ca dev-certs issue localhost 127.0.0.1\n  source <(platform-ca completion bash)\n",
);
endQuietlyOnClosedPipe();
const code = await runProgram(program, process.argv);
process.exitCode = code;
