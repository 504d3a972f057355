// The published OpenAPI documents: v3 per group/version and v2 for all, built once per catalog from the field schema.
import { createHash } from "node:crypto";
import { listMeta, schemaRegistry } from "../../api/schema.js";
import { API_LEVEL, type ApiCatalog } from "../discovery.js";
import type { ResourceDefinition } from "../registry/strategy.js";
import { encodeOpenApiV2 } from "./protobuf-v2.js";
import { Definitions, definitionPrefix, type Dialect, type OpenApiSchema } from "./schemas.js";

/** A document serialized once, with the hash clients cache it by (the v3 index's `?hash=`, the ETag). */
export interface PublishedDocument {
  readonly json: string;
  readonly hash: string;
}

/** The v2 document in gnostic's protobuf encoding. */
export interface PublishedProtobuf {
  readonly bytes: Buffer;
  readonly hash: string;
}

export interface PublishedApis {
  /** By index path: `api/v1`, `apis/{group}/{version}`. */
  readonly v3: ReadonlyMap<string, PublishedDocument>;
  readonly v3Index: PublishedDocument;
  readonly v2: PublishedDocument;
  readonly v2Protobuf: PublishedProtobuf;
}

const published = new WeakMap<ApiCatalog, PublishedApis>();

/** The documents for `catalog`; the schema and the catalog never change while a server runs, so they are built once. */
export function publishedApis(catalog: ApiCatalog): PublishedApis {
  const cached = published.get(catalog);
  if (cached !== undefined) return cached;
  const v3 = new Map<string, PublishedDocument>();
  for (const [group, version] of groupVersions(catalog)) v3.set(indexPath(group, version), publish(openApiV3(catalog, group, version)));
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const [path, doc] of v3) paths[path] = { serverRelativeURL: `/openapi/v3/${path}?hash=${doc.hash}` };
  const v2 = openApiV2(catalog);
  const bytes = encodeOpenApiV2(v2);
  const result = { v3, v3Index: publish({ paths }), v2: publish(v2), v2Protobuf: { bytes, hash: sha512(bytes) } };
  published.set(catalog, result);
  return result;
}

export const indexPath = (group: string, version: string): string => (group ? `apis/${group}/${version}` : `api/${version}`);

function publish(doc: unknown): PublishedDocument {
  const json = JSON.stringify(doc);
  return { json, hash: sha512(json) };
}

const sha512 = (data: string | Buffer): string => createHash("sha512").update(data).digest("hex").toUpperCase();

function groupVersions(catalog: ApiCatalog): [string, string][] {
  const seen = new Map<string, [string, string]>();
  for (const def of catalog.definitions) seen.set(`${def.group}/${def.version}`, [def.group, def.version]);
  return [...seen.values()];
}

const info = { title: "platform-ca", version: `v${API_LEVEL.major}.${API_LEVEL.minor}.0` };

/** One OpenAPI v3 document: the group/version's kinds, the object types they use, and their operations. */
export function openApiV3(catalog: ApiCatalog, group: string, version: string) {
  const defs = new Definitions("v3", catalog.names.suffix);
  const paths = operations(catalog, defs, (def) => def.group === group && def.version === version);
  return { openapi: "3.0.0", info, paths, components: { schemas: defs.schemas } };
}

/** The Swagger 2.0 document: every group/version in one. */
export function openApiV2(catalog: ApiCatalog) {
  const defs = new Definitions("v2", catalog.names.suffix);
  const paths = operations(catalog, defs, () => true);
  return { swagger: "2.0", info, paths, definitions: defs.schemas };
}

/**
 * Defines the schema kinds of the selected group/versions (a kind no resource serves, such as a review's or
 * Status, goes to its group's preferred version) and returns the paths of their resources.
 */
function operations(catalog: ApiCatalog, defs: Definitions, selected: (def: { group: string; version: string }) => boolean): Record<string, unknown> {
  const registry = schemaRegistry(catalog.names);
  const versionsOf = (group: string, kind: string): string[] => {
    const served = catalog.definitions.filter((d) => d.group === group && d.kind === kind).map((d) => d.version);
    return served.length > 0 ? served : catalog.versionsOf(group).slice(0, 1);
  };
  const kindNames = new Map<string, string>();
  for (const { group, kind } of registry.kinds()) {
    for (const version of versionsOf(group, kind)) {
      if (!selected({ group, version })) continue;
      const name = `${definitionPrefix(catalog.names.suffix, group, version)}.${kind}`;
      defs.kind(name, registry.lookup(group, kind)!, { group, version, kind });
      kindNames.set(`${group}/${version}/${kind}`, name);
    }
  }
  const paths: Record<string, unknown> = {};
  for (const def of catalog.definitions) {
    const name = kindNames.get(`${def.group}/${def.version}/${def.kind}`);
    if (!selected(def) || name === undefined) continue;
    if (!def.createOnly && def.verbs.includes("list")) {
      defs.list(`${name}List`, name, listMeta, { group: def.group, version: def.version, kind: def.listKind });
    }
    Object.assign(paths, resourcePaths(def, defs, name));
  }
  return paths;
}

/** The query parameters of the seed's write sets (kubectl looks for fieldValidation to leave validation to the server). */
const WRITE_PARAMETERS = ["dryRun", "fieldManager", "fieldValidation", "pretty"];

function resourcePaths(def: ResourceDefinition, defs: Definitions, name: string): Record<string, unknown> {
  const gvk = { group: def.group, version: def.version, kind: def.kind };
  const query = (names: readonly string[]) =>
    names.map((n) => (defs.dialect === "v2" ? { name: n, in: "query", type: "string", uniqueItems: true } : { name: n, in: "query", schema: { type: "string", uniqueItems: true } }));
  const op = (action: string, id: string, withBody: boolean, responseName = name): Record<string, unknown> => {
    const body = withBody ? (action === "patch" ? defs.patchBody() : defs.ref(name)) : undefined;
    // v2 lists the body among the parameters, v3 has a requestBody.
    const bodyParameter = body && defs.dialect === "v2" ? [{ name: "body", in: "body", required: true, schema: body }] : [];
    return {
      operationId: `${id}${def.kind}`,
      ...bodyAndResponse(defs.dialect, body, defs.ref(responseName), action === "patch" ? PATCH_TYPES : ["*/*"]),
      ...(withBody ? { parameters: [...bodyParameter, ...query(WRITE_PARAMETERS)] } : {}),
      "x-kubernetes-action": action,
      "x-kubernetes-group-version-kind": gvk,
    };
  };
  const base = def.group ? `/apis/${def.group}/${def.version}` : `/api/${def.version}`;
  const collection = def.namespaced ? `${base}/namespaces/{namespace}/${def.plural}` : `${base}/${def.plural}`;
  if (def.createOnly) {
    // Reviews are never stored, so there is no item path. kubectl decides whether the server validates fields by
    // looking for a PATCH operation of the kind; without one it validates on the client and refuses unknown kinds.
    // The PATCH listed here only carries that signal: the server answers it with 405.
    return { [collection]: { post: op("post", "create", true), patch: op("patch", "patch", true) } };
  }
  const has = (verb: string) => def.verbs.includes(verb as never);
  const item: Record<string, unknown> = {};
  if (has("get")) item.get = op("get", "read", false);
  if (has("update")) item.put = op("put", "replace", true);
  if (has("patch")) item.patch = op("patch", "patch", true);
  if (has("delete")) item.delete = op("delete", "delete", false);
  const list: Record<string, unknown> = {};
  if (has("list")) list.get = op("list", "list", false, `${name}List`);
  if (has("create")) list.post = op("post", "create", true);
  return { [collection]: list, [`${collection}/{name}`]: item };
}

/**
 * The patch media types the server takes. kubectl's client-side apply builds a strategic merge patch from these
 * schemas only when the PATCH operation lists its media type.
 */
// As upstream: every patch type the server takes, server-side apply included.
const PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"];

function bodyAndResponse(dialect: Dialect, body: OpenApiSchema | undefined, response: OpenApiSchema, bodyTypes: readonly string[]): Record<string, unknown> {
  if (dialect === "v2") {
    return {
      ...(body ? { consumes: [...bodyTypes] } : {}),
      produces: ["application/json", "application/yaml"],
      responses: { "200": { description: "OK", schema: response } },
    };
  }
  return {
    ...(body ? { requestBody: { content: Object.fromEntries(bodyTypes.map((t) => [t, { schema: body }])), required: true } } : {}),
    responses: { "200": { description: "OK", content: { "application/json": { schema: response } } } },
  };
}
