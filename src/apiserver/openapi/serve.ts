// Serving the published OpenAPI documents (JSON; v2 also as protobuf) with upstream's caching: ETags, `?hash=` URLs, 304s.
import type { FastifyReply, FastifyRequest } from "fastify";
import { PlatformError } from "../../errors.js";
import type { ApiCatalog } from "../discovery.js";
import type { Target } from "../http/routes.js";
import { indexPath, publishedApis, type PublishedDocument } from "./documents.js";

export type OpenApiTarget = Extract<Target, { type: "openapiV2" | "openapiIndex" | "openapi" }>;

/** Media types a JSON document satisfies (kubectl asks v3 for JSON; anything else is refused as upstream does). */
const JSON_ACCEPT = /(^|,)\s*(application\/json|application\/\*|\*\/\*)\s*(;|,|$)/i;
/** The one media type kubectl asks /openapi/v2 for. */
const PROTOBUF_V2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/** What upstream answers it with: the `@` is not valid in a Content-Type, and client-go refuses it there. */
const PROTOBUF_V2_RETURNED = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

export function serveOpenApi(req: FastifyRequest, reply: FastifyReply, target: OpenApiTarget, catalog: ApiCatalog): FastifyReply {
  const accept = req.headers.accept;
  const apis = publishedApis(catalog);
  if (target.type === "openapiV2" && accept?.toLowerCase().includes(PROTOBUF_V2)) {
    return sendDocument(req, reply, { body: apis.v2Protobuf.bytes, hash: apis.v2Protobuf.hash, type: PROTOBUF_V2_RETURNED }, "no-cache, private");
  }
  if (accept !== undefined && accept.trim() !== "" && !JSON_ACCEPT.test(accept)) {
    throw new PlatformError("NOT_ACCEPTABLE", `none of the requested media types can be served: ${accept}; the OpenAPI documents are served as application/json (and /openapi/v2 as ${PROTOBUF_V2})`);
  }
  if (target.type === "openapiV2") return sendDocument(req, reply, json(apis.v2), "no-cache, private");
  if (target.type === "openapiIndex") return sendDocument(req, reply, json(apis.v3Index), "no-cache, private");
  const path = indexPath(target.group, target.version);
  const doc = apis.v3.get(path)!;
  const hash = (req.query as Record<string, unknown>).hash;
  if (hash === undefined) return sendDocument(req, reply, json(doc), "no-cache, private");
  // A stale hash is sent on to the current URL, so a client's cache keyed by URL never holds an outdated document.
  if (hash !== doc.hash) return reply.code(301).header("Location", `/openapi/v3/${path}?hash=${doc.hash}`).header("Cache-Control", "no-cache, private").send();
  return sendDocument(req, reply, json(doc), "public, immutable").header("Expires", new Date(Date.now() + 365 * 86_400_000).toUTCString());
}

interface Body {
  readonly body: string | Buffer;
  readonly hash: string;
  readonly type: string;
}

const json = (doc: PublishedDocument): Body => ({ body: doc.json, hash: doc.hash, type: "application/json" });

function sendDocument(req: FastifyRequest, reply: FastifyReply, doc: Body, cacheControl: string): FastifyReply {
  const etag = `"${doc.hash}"`;
  reply.header("ETag", etag).header("Cache-Control", cacheControl);
  const match = req.headers["if-none-match"];
  if (match !== undefined && match.split(",").some((t) => t.trim() === etag || t.trim() === "*")) return reply.code(304).send();
  return reply.code(200).type(doc.type).send(doc.body);
}
