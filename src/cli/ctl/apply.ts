// `platformctl apply -f`: client-side (create, or a three-way merge patch against the last-applied annotation) or server-side.
import { isDeepStrictEqual } from "node:util";
import type { Command } from "commander";
import type { GroupNames } from "../../api/group.js";
import type { ApiObject } from "../../api/meta.js";
import { PATCH_CONTENT_TYPES } from "../../client/index.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { UsageError, type CommandModule } from "../program.js";
import { withContext, type CtlContext } from "./context.js";
import { createObject } from "./create.js";
import { Failures } from "./failures.js";
import { addWriteFlags, checkFilenames, dryRunSuffix, outputOf, writeQuery, writeSettingsOf, type WriteFlags, type WriteSettings } from "./flags.js";
import { printObject, qualifiedName } from "./output/printer.js";
import { fileTargets, objectPath, type Target } from "./targets.js";

type Json = unknown;
type JsonMap = Record<string, Json>;

/** The annotation holding what was applied last: the naming profile's (kubectl's own under `k8s.io`). */
export function lastAppliedAnnotation(names: GroupNames): string {
  return names.lastAppliedAnnotation;
}

const isMap = (v: Json): v is JsonMap => typeof v === "object" && v !== null && !Array.isArray(v);

/** Keys of `modified` that `current` lacks or holds differently (maps compared key by key). */
function additions(current: Json, modified: JsonMap): JsonMap {
  const out: JsonMap = {};
  for (const [key, value] of Object.entries(modified)) {
    const cur = isMap(current) ? current[key] : undefined;
    if (isMap(value) && isMap(cur)) {
      const sub = additions(cur, value);
      if (Object.keys(sub).length > 0) out[key] = sub;
    } else if (!isDeepStrictEqual(cur, value)) out[key] = value;
  }
  return out;
}

/** Keys applied before (`original`), gone from `modified`, and still present in `current`: set to null. */
function deletions(original: JsonMap, modified: JsonMap, current: Json): JsonMap {
  const out: JsonMap = {};
  for (const [key, value] of Object.entries(original)) {
    if (!isMap(current) || !(key in current)) continue;
    if (!(key in modified)) out[key] = null;
    else if (isMap(value) && isMap(modified[key])) {
      const sub = deletions(value, modified[key] as JsonMap, current[key]);
      if (Object.keys(sub).length > 0) out[key] = sub;
    }
  }
  return out;
}

function deepMerge(a: JsonMap, b: JsonMap): JsonMap {
  const out: JsonMap = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = isMap(v) && isMap(out[k]) ? deepMerge(out[k] as JsonMap, v) : v;
  return out;
}

/** The JSON merge patch taking `current` to `modified` while removing only what was applied before. */
export function threeWayMergePatch(original: JsonMap | undefined, modified: JsonMap, current: JsonMap): JsonMap {
  return deepMerge(original ? deletions(original, modified, current) : {}, additions(current, modified));
}

/** The manifest with the annotation recording it (the recorded copy leaves the annotation out). */
export function withLastApplied(obj: ApiObject, key: string): ApiObject {
  const annotations = { ...(obj.metadata.annotations ?? {}) };
  delete annotations[key];
  const recorded = { ...obj, metadata: { ...obj.metadata, ...(Object.keys(annotations).length > 0 ? { annotations } : { annotations: undefined }) } };
  return { ...obj, metadata: { ...obj.metadata, annotations: { ...annotations, [key]: `${JSON.stringify(recorded)}\n` } } };
}

/** kubectl's warning when the live object was not made by apply (the annotation is then added by this apply). */
export function missingLastAppliedWarning(resource: string, name: string, key: string): string {
  return (
    `Warning: resource ${resource}/${name} is missing the ${key} annotation which is required by platformctl apply. ` +
    "platformctl apply should only be used on resources created declaratively by platformctl apply. The missing annotation will be patched automatically.\n"
  );
}

async function applyOne(ctx: CtlContext, t: Target, key: string, w: WriteSettings): Promise<{ result: ApiObject; verb: string }> {
  const client = await ctx.client();
  const modified = withLastApplied(t.object!, key);
  let current: ApiObject | undefined;
  try {
    current = await client.request<ApiObject>("GET", objectPath(client, t));
  } catch (err) {
    if (!isPlatformError(err, "NOT_FOUND")) throw err;
  }
  if (!current) return { result: await createObject(ctx, t, modified, w), verb: "created" };
  const recorded = current.metadata.annotations?.[key];
  if (recorded === undefined) ctx.io.err(missingLastAppliedWarning(t.info.plural, t.name, key));
  let original: JsonMap | undefined;
  try {
    original = recorded ? (JSON.parse(recorded) as JsonMap) : undefined;
  } catch {
    original = undefined;
  }
  const patch = threeWayMergePatch(original, modified as unknown as JsonMap, current as unknown as JsonMap);
  if (Object.keys(patch).length === 0) return { result: current, verb: "unchanged" };
  const result = w.dryRun === "client" ? current : await client.request<ApiObject>("PATCH", objectPath(client, t, undefined, writeQuery(w)), patch, { contentType: PATCH_CONTENT_TYPES.merge });
  return { result, verb: "configured" };
}

/** The apply media type: the server merges the object under field ownership (server-side apply). */
const APPLY_PATCH = "application/apply-patch+yaml";
/** kubectl's field manager names: the client-side one is the flag's default, the server-side one replaces it. */
const CLIENT_SIDE_MANAGER = "platformctl-client-side-apply";
const SERVER_SIDE_MANAGER = "platformctl";

/** kubectl's advice after a conflict, word for word (the first line is the server's message). */
const CONFLICT_ADVICE = `
Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the \`--force-conflicts\` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts`;

/** One object applied by the server: created or merged, a conflict answered with kubectl's advice. */
async function serverSideApply(ctx: CtlContext, t: Target, w: WriteSettings, force: boolean): Promise<ApiObject> {
  const client = await ctx.client();
  const query = { ...writeQuery(w), ...(force ? { force: "true" } : {}) };
  try {
    return await client.request<ApiObject>("PATCH", objectPath(client, t, undefined, query), t.object, { contentType: APPLY_PATCH });
  } catch (err) {
    if (isPlatformError(err, "CONFLICT") && err.causes.some((c) => c.reason === "FieldManagerConflict")) {
      throw new PlatformError("CONFLICT", `${err.message}${CONFLICT_ADVICE}`);
    }
    throw err;
  }
}

interface ApplyFlags extends WriteFlags {
  readonly serverSide?: boolean;
  readonly forceConflicts?: boolean;
}

async function run(ctx: CtlContext, args: readonly string[], flags: ApplyFlags, self: Command): Promise<void> {
  const files = checkFilenames(flags, args);
  if (files.length === 0) throw new UsageError("must specify -f/--filename with the objects to apply");
  const { spec, print } = outputOf(flags);
  const serverSide = flags.serverSide === true;
  if (flags.forceConflicts && !serverSide) throw new UsageError("--force-conflicts only works with --server-side");
  const manager = serverSide && self.getOptionValueSource("fieldManager") === "default" ? SERVER_SIDE_MANAGER : flags.fieldManager;
  const w = writeSettingsOf({ ...flags, fieldManager: manager }, ctx.io);
  if (serverSide && w.dryRun === "client") throw new UsageError("--dry-run=client doesn't work with --server-side (did you mean --dry-run=server instead?)");
  const key = lastAppliedAnnotation(ctx.names);
  // Every object is applied; the ones that could not be are reported at the end (exit 1).
  const failures = new Failures();
  for (const t of await fileTargets(ctx, files, flags.recursive === true)) {
    const applied = await failures.attempt(async () =>
      serverSide ? { result: await serverSideApply(ctx, t, w, flags.forceConflicts === true), verb: "serverside-applied" } : applyOne(ctx, t, key, w),
    );
    if (applied) ctx.io.out(spec.format === "default" ? `${qualifiedName(applied.result)} ${applied.verb}${dryRunSuffix(w.dryRun)}\n` : printObject(spec, applied.result, print));
  }
  failures.throwIfAny(ctx.io);
}

export const applyVerb: CommandModule = (program: Command) => {
  const cmd = program
    .command("apply")
    .description("apply a configuration to resources from files or stdin (client-side: create, or patch what changed)")
    .argument("[args...]");
  cmd
    .option("--server-side", "let the server merge the objects and track field ownership (server-side apply)")
    .option("--force-conflicts", "with --server-side: take the fields other managers own instead of failing on conflicts");
  addWriteFlags(cmd, CLIENT_SIDE_MANAGER, "holding the objects to apply")
    .addHelpText(
      "after",
      "\nClient-side, the applied manifest is recorded in the annotation platformctl.<group suffix>/last-applied-configuration\n(kubectl.kubernetes.io/last-applied-configuration under --group-suffix k8s.io);\nfields removed from the manifest since are removed from the object.\nServer-side (--server-side), the server merges the manifest and records the fields each manager owns in\nmetadata.managedFields (field manager \"platformctl\" unless --field-manager names another); a field another\nmanager owns with another value is a conflict unless --force-conflicts.\n\nExamples:\n  platformctl apply -f sa.yaml\n  platformctl apply -f manifests/ -R\n  platformctl apply --server-side --field-manager=ci -f sa.yaml\n",
    )
    .action((args: string[], flags: ApplyFlags, self: Command) => withContext(self, (ctx) => run(ctx, args, flags, self)));
};
