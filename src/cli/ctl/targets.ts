// The objects a command acts on: `TYPE NAME…`, `TYPE/NAME…` or the objects of -f files, each with its resource and namespace.
import type { ApiObject } from "../../api/meta.js";
import { pathWithQuery, ResourceClientImpl, type Query, type RestClient } from "../../client/index.js";
import { PlatformError } from "../../errors.js";
import { UsageError } from "../program.js";
import type { CtlContext } from "./context.js";
import type { ResourceInfo } from "./discovery.js";
import { readManifests } from "./manifests.js";

export interface Target {
  readonly info: ResourceInfo;
  readonly name: string;
  /** Set for namespaced resources. */
  readonly namespace?: string;
  /** The object as the -f file gives it. */
  readonly object?: ApiObject;
  readonly source?: string;
}

/** Paths of one resource on the server. */
export function pathsFor(client: RestClient, info: ResourceInfo): ResourceClientImpl {
  return new ResourceClientImpl(client, { group: info.group, version: info.version, plural: info.plural, namespaced: info.namespaced });
}

/** The path of one object (optionally a subresource), with a query. */
export function objectPath(client: RestClient, t: Target, subresource?: string, query?: Query): string {
  return pathWithQuery(pathsFor(client, t.info).itemPath(t.name, t.namespace, subresource), query);
}

/** Splits `TYPE NAME…` and `TYPE/NAME…` arguments into (type, name) pairs. */
export function splitTypeNames(args: readonly string[], verb: string): { type: string; name: string }[] {
  if (args.length === 0) throw new UsageError(`you must specify the type of resource to ${verb} and a name, or -f`);
  if (args.every((a) => a.includes("/"))) {
    return args.map((a) => {
      const [type, ...rest] = a.split("/");
      const name = rest.join("/");
      if (!type || !name) throw new UsageError(`arguments in resource/name form must have a single resource and name, got ${JSON.stringify(a)}`);
      return { type, name };
    });
  }
  if (args.some((a) => a.includes("/"))) throw new UsageError("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form");
  const [type, ...names] = args;
  if (names.length === 0) throw new UsageError(`you must specify the name of the ${type} to ${verb}`);
  return names.map((name) => ({ type: type!, name }));
}

/** Resolves named targets through discovery; namespaced ones get -n or the context's namespace. */
export async function namedTargets(ctx: CtlContext, args: readonly string[], verb: string): Promise<Target[]> {
  const pairs = splitTypeNames(args, verb);
  const discovery = await ctx.discovery();
  const namespace = await ctx.namespace();
  const out: Target[] = [];
  for (const { type, name } of pairs) {
    const info = await discovery.resolve(type);
    out.push({ info, name, ...(info.namespaced ? { namespace } : {}) });
  }
  return out;
}

/** The objects of -f files, each matched to its resource; a -n that contradicts a file's namespace is refused. */
export async function fileTargets(ctx: CtlContext, files: readonly string[], recursive: boolean): Promise<Target[]> {
  const manifests = await readManifests(files, { recursive });
  if (manifests.length === 0) throw new PlatformError("INVALID_ARGUMENT", "no objects passed to the command (the files hold no documents)");
  const discovery = await ctx.discovery();
  const fallback = await ctx.namespace();
  const out: Target[] = [];
  for (const { source, object } of manifests) {
    const info = await discovery.forObject(object.apiVersion, object.kind);
    const own = object.metadata.namespace;
    if (info.namespaced && own && ctx.flags.namespace && own !== ctx.flags.namespace) {
      throw new PlatformError(
        "INVALID_ARGUMENT",
        `the namespace from the provided object "${own}" does not match the namespace "${ctx.flags.namespace}". You must pass '--namespace=${own}' to perform this operation.`,
      );
    }
    out.push({ info, name: object.metadata.name ?? "", ...(info.namespaced ? { namespace: own || fallback } : {}), object, source });
  }
  return out;
}

/** Named or -f targets, whichever the command line gives. */
export async function targetsOf(ctx: CtlContext, args: readonly string[], files: readonly string[], recursive: boolean, verb: string): Promise<Target[]> {
  return files.length > 0 ? fileTargets(ctx, files, recursive) : namedTargets(ctx, args, verb);
}
