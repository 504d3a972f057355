// `platformctl __complete`: resource types or object names for the completion scripts, fetched and cached in a file.
import { execFile } from "node:child_process";
import { mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { promisify } from "node:util";
import type { Command } from "commander";
import { UsageError, type CommandModule } from "../program.js";

/** How long cached names answer: resource types change with the server (as kubectl's discovery cache), objects often. */
export const COMPLETION_TTL_SECONDS = { resources: 600, names: 60 } as const;

type Kind = keyof typeof COMPLETION_TTL_SECONDS;

/** The platformctl arguments that print the names, one per line (`get` prints type/name). */
function listing(kind: Kind, type: string | undefined): string[] {
  if (kind === "resources") return ["api-resources", "-o", "name"];
  if (!type) throw new UsageError("__complete names needs a resource type");
  return ["get", type, "-o", "name"];
}

/**
 * Runs the listing as platformctl with the flags given before `__complete` (the connection flags of the line being
 * completed), writes `<expiry epoch seconds>\n<name>\n...` to the cache file the script named, and prints the names.
 */
async function complete(kind: string, type: string | undefined, cacheFile: string, argv: readonly string[]): Promise<void> {
  if (kind !== "resources" && kind !== "names") throw new UsageError(`__complete: expected resources or names, got ${JSON.stringify(kind)}`);
  const at = argv.indexOf("__complete");
  const given = argv.slice(2, at < 0 ? 2 : at);
  const { stdout } = await promisify(execFile)(process.execPath, [argv[1]!, ...given, ...listing(kind, type), "--request-timeout", "5s"], { timeout: 10_000 });
  const names = stdout.split("\n").filter(Boolean).map((line) => (kind === "names" ? line.slice(line.lastIndexOf("/") + 1) : line));
  const expires = Math.floor(Date.now() / 1000) + COMPLETION_TTL_SECONDS[kind];
  await mkdir(dirname(cacheFile), { recursive: true, mode: 0o700 });
  const temp = `${cacheFile}.${process.pid}`;
  await writeFile(temp, `${expires}\n${names.map((n) => `${n}\n`).join("")}`, { mode: 0o600 });
  await rename(temp, cacheFile);
  process.stdout.write(names.map((n) => `${n}\n`).join(""));
}

export const completeNamesVerb: CommandModule = (program: Command) => {
  program
    .command("__complete", { hidden: true })
    .description("names for the completion scripts (cached in --cache-file)")
    .argument("<kind>", "resources or names")
    .argument("[type]", "resource type of the names")
    .requiredOption("--cache-file <file>", "file the names are cached in")
    .action((kind: string, type: string | undefined, flags: { cacheFile: string }) => complete(kind, type, flags.cacheFile, process.argv));
};
