// `platformctl patch`: JSON, merge or strategic merge patches from JSON or YAML, on the server or --local on file content.
import { readFile } from "node:fs/promises";
import { isDeepStrictEqual } from "node:util";
import type { Command } from "commander";
import { parsePlainYaml } from "../../plain-data.js";
import type { ApiObject } from "../../api/meta.js";
import { schemaRegistry } from "../../api/schema.js";
import { applyPatch, PATCH_CONTENT_TYPES, type JsonObject, type PatchType } from "../../apiserver/patch/index.js";
import { PlatformError } from "../../errors.js";
import { UsageError, type CommandModule } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { groupResource } from "./discovery.js";
import { Failures } from "./failures.js";
import { addWriteFlags, checkFilenames, dryRunSuffix, outputOf, writeQuery, writeSettingsOf, type WriteFlags } from "./flags.js";
import { readManifests } from "./manifests.js";
import { printObject, qualifiedName, type OutputSpec, type PrintOptions } from "./output/printer.js";
import { objectPath, targetsOf, type Target } from "./targets.js";

interface PatchFlags extends WriteFlags {
  readonly patch?: string;
  readonly patchFile?: string;
  readonly type: string;
  readonly local?: boolean;
  readonly subresource?: string;
}

const EXAMPLES = `
Examples:
  # Add a label with a strategic merge patch, given as JSON or as YAML
  platformctl patch serviceaccount builder -p '{"metadata":{"labels":{"team":"a"}}}'
  platformctl patch sa builder -p $'metadata:\\n  labels:\\n    team: a'

  # Replace a field with a JSON patch
  platformctl patch csr alice --type=json -p '[{"op":"add","path":"/metadata/annotations/owner","value":"ops"}]'

  # Patch the object named in a file, or patch the file content itself without a server
  platformctl patch -f sa.yaml --type=merge -p '{"automountServiceAccountToken":false}'
  platformctl patch --local -f sa.yaml -p '{"metadata":{"labels":{"x":"y"}}}' -o yaml

  # Patch a subresource
  platformctl patch csr alice --subresource=status --type=merge -p '{"status":{"conditions":[...]}}'
`;

/** Reads and decodes the patch: JSON or YAML text, an array for JSON patch, an object for the merge kinds. */
export async function readPatch(flags: Pick<PatchFlags, "patch" | "patchFile">, type: PatchType): Promise<unknown> {
  if (flags.patch !== undefined && flags.patchFile !== undefined) throw new UsageError("-p/--patch and --patch-file exclude each other");
  let text = flags.patch;
  if (flags.patchFile !== undefined) {
    try {
      text = await readFile(flags.patchFile, "utf8");
    } catch (err) {
      throw new PlatformError("IO_ERROR", `unable to read patch file ${flags.patchFile}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
    }
  }
  if (text === undefined || text.trim() === "") throw new UsageError("must specify -p/--patch or --patch-file containing the patch to apply");
  let patch: unknown;
  try {
    patch = parsePlainYaml(text, { uniqueKeys: false });
  } catch (err) {
    throw new PlatformError("INVALID_ARGUMENT", `unable to parse the patch ${JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text)}: ${(err as Error).message.split("\n")[0]}`);
  }
  const isArray = Array.isArray(patch);
  if (type === "json" && !isArray) throw new PlatformError("INVALID_ARGUMENT", "a JSON patch (--type=json) must be a list of operations (op, path, value)");
  if (type !== "json" && (isArray || typeof patch !== "object" || patch === null)) {
    throw new PlatformError("INVALID_ARGUMENT", `a ${type} merge patch must be an object, got ${isArray ? "a list" : JSON.stringify(patch)}`);
  }
  return patch;
}

function patchTypeOf(value: string): PatchType {
  if (value === "json" || value === "merge" || value === "strategic") return value;
  throw new UsageError(`--type must be one of [json merge strategic], got ${JSON.stringify(value)}`);
}

/** The patch applied here, as the server would: strategic needs the kind's schema. */
export function patchLocally(ctx: CtlContext, obj: ApiObject, type: PatchType, patch: unknown): ApiObject {
  const schema = schemaRegistry(ctx.names).forObject(obj);
  return applyPatch(PATCH_CONTENT_TYPES[type], obj as unknown as JsonObject, patch, { schema, kind: obj.kind }) as unknown as ApiObject;
}

/** Objects equal apart from what every write changes (resourceVersion, managedFields). */
function sameContent(a: ApiObject, b: ApiObject): boolean {
  const strip = (o: ApiObject) => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined, managedFields: undefined } });
  return isDeepStrictEqual(strip(a), strip(b));
}

function report(ctx: CtlContext, spec: OutputSpec, print: PrintOptions, obj: ApiObject, line: string): void {
  ctx.io.out(spec.format === "default" ? `${line}\n` : printObject(spec, obj, print));
}

async function patchOnServer(ctx: CtlContext, t: Target, flags: PatchFlags, type: PatchType, patch: unknown, spec: OutputSpec, print: PrintOptions): Promise<void> {
  const client = await ctx.client();
  const sub = flags.subresource;
  if (sub !== undefined && !t.info.subresources.includes(sub)) {
    const has = t.info.subresources.length > 0 ? ` (it has: ${t.info.subresources.join(", ")})` : " (it has none)";
    throw new PlatformError("NOT_FOUND", `the server does not serve the subresource "${sub}" for ${groupResource(t.info)}${has}`);
  }
  const w = writeSettingsOf(flags, ctx.io);
  const before = await client.request<ApiObject>("GET", objectPath(client, t, sub));
  let after: ApiObject;
  if (w.dryRun === "client") {
    after = patchLocally(ctx, before, type, patch);
  } else {
    after = await client.request<ApiObject>("PATCH", objectPath(client, t, sub, writeQuery(w)), patch, { contentType: PATCH_CONTENT_TYPES[type] });
  }
  const changed = !sameContent(before, after);
  report(ctx, spec, print, after, `${qualifiedName(after)} patched${changed ? "" : " (no change)"}${dryRunSuffix(w.dryRun)}`);
}

async function run(ctx: CtlContext, args: readonly string[], flags: PatchFlags): Promise<void> {
  const files = checkFilenames(flags, args);
  const type = patchTypeOf(flags.type);
  const { spec, print } = outputOf(flags);
  if (flags.local) {
    if (files.length === 0) throw new UsageError("--local needs the objects from -f/--filename");
    if (args.length > 0) throw new UsageError("cannot name resources on the server together with --local");
    const patch = await readPatch(flags, type);
    // Without -o the patched content is the point of --local, so it prints as YAML.
    const local = spec.format === "default" ? ({ format: "yaml" } as const) : spec;
    for (const { object } of await readManifests(files, { recursive: flags.recursive === true })) {
      ctx.io.out(printObject(local, patchLocally(ctx, object, type, patch), print));
    }
    return;
  }
  const patch = await readPatch(flags, type);
  // Every object is patched; the ones that could not be are reported at the end (exit 1).
  const failures = new Failures();
  for (const t of await targetsOf(ctx, args, files, flags.recursive === true, "patch")) {
    await failures.attempt(() => patchOnServer(ctx, t, flags, type, patch, spec, print));
  }
  failures.throwIfAny(ctx.io);
}

export const patchVerb: CommandModule = (program: Command) => {
  const cmd = program
    .command("patch")
    .description("update fields of a resource with a strategic merge, JSON merge or JSON patch")
    .usage("(-f FILENAME | TYPE NAME) [-p PATCH | --patch-file FILE] [options]")
    .argument("[resource...]", "TYPE NAME or TYPE/NAME")
    .option("-p, --patch <patch>", "the patch, as JSON or YAML")
    .option("--patch-file <file>", "file holding the patch")
    .option("--type <type>", "json, merge or strategic", "strategic")
    .option("--local", "patch the content of the -f files, without a server, and print the result")
    .option("--subresource <name>", "patch this subresource (status, approval) instead of the object");
  addWriteFlags(cmd, "platformctl-patch", "naming the objects to patch")
    .addHelpText("after", EXAMPLES)
    .action((args: string[], flags: PatchFlags, self: Command) => withContext(self, (ctx) => run(ctx, args, flags)));
};
