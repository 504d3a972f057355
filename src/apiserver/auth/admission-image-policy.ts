// The ImagePolicyWebhook plugin, as upstream's: every Pod create or update sends an ImageReview (imagepolicy.<suffix>/
// v1alpha1) of its images to a backend, whose answers are cached; a failed call admits the Pod only with defaultAllow.
import type { ApiObject } from "../../api/meta.js";
import type { ImagePolicyConfig } from "../../config/image-policy.js";
import { PlatformError, toPlatformError } from "../../errors.js";
import { WebhookClient, type Dialer } from "../webhook/client.js";
import { admissionForbidden, type AdmissionAttributes, type AdmissionContext, type MutatingPlugin } from "./admission.js";
import { ttlCache } from "../../time/ttl-cache.js";

interface ReviewStatus {
  readonly allowed: boolean;
  readonly reason?: string;
  readonly auditAnnotations?: Readonly<Record<string, string>>;
}

/** Upstream's response cache size. */
const CACHE_ENTRIES = 1024;

/**
 * Runs with the mutating plugins (after the mutating webhooks, so it sees the final images) because, as upstream, a
 * Pod admitted in spite of a failed call is annotated `alpha.image-policy.<suffix>/failed-open: "true"`.
 */
export function imagePolicyPlugin(config: ImagePolicyConfig, dial?: Dialer): MutatingPlugin {
  if (!config.rest) throw new PlatformError("INTERNAL", "the ImagePolicyWebhook configuration is used before its kubeConfigFile was read");
  const client = new WebhookClient({ config: config.rest, retry: { initialBackoffMs: config.retryBackoffMs }, ...(dial && { dial }) });
  const cache = ttlCache<string, ReviewStatus>(CACHE_ENTRIES);
  return {
    name: "ImagePolicyWebhook",
    async admit(a, obj, _old, ctx) {
      if (a.group !== "" || a.resource !== "pods" || a.subresource || (a.operation !== "CREATE" && a.operation !== "UPDATE") || !obj) return;
      const suffix = ctx.names.suffix;
      const spec = (obj.spec ?? {}) as { containers?: { image?: string }[]; initContainers?: { image?: string }[] };
      const review = {
        containers: [...(spec.containers ?? []), ...(spec.initContainers ?? [])].map((c) => ({ image: c.image ?? "" })),
        // Only the annotations meant for the backend: keys `*.image-policy.<suffix>/*`.
        annotations: Object.fromEntries(Object.entries(obj.metadata.annotations ?? {}).filter(([k]) => k.includes(`.image-policy.${suffix}/`))),
        namespace: a.namespace ?? "",
      };
      const key = JSON.stringify(review);
      let status = cache.get(key);
      if (!status) {
        try {
          // Within the request's deadline, shared with its other webhooks.
          status = await ask(client, review, suffix, a.deadline?.signal);
        } catch (err) {
          const signal = a.deadline?.signal;
          const expired = signal?.aborted ? new PlatformError("TIMEOUT", (signal.reason as Error).message) : undefined;
          return failed(config, a, obj, ctx, expired ?? toPlatformError(err));
        }
        const ttl = status.allowed ? config.allowTtlMs : config.denyTtlMs;
        if (ttl > 0) cache.set(key, status, { ttl });
      }
      for (const [k, v] of Object.entries(status.auditAnnotations ?? {})) a.annotate?.(`imagepolicywebhook.image-policy.${suffix}/${k}`, v);
      if (!status.allowed) {
        throw admissionForbidden(a, status.reason ? `image policy webhook backend denied one or more images: ${status.reason}` : "one or more images rejected by webhook backend");
      }
    },
  };
}

async function ask(client: WebhookClient, spec: object, suffix: string, signal: AbortSignal | undefined): Promise<ReviewStatus> {
  const answer = await client.post(JSON.stringify({ apiVersion: `imagepolicy.${suffix}/v1alpha1`, kind: "ImageReview", spec }), signal);
  const status = (JSON.parse(answer.body.toString("utf8")) as { status?: unknown }).status as Partial<ReviewStatus> | undefined;
  if (typeof status !== "object" || status === null || typeof status.allowed !== "boolean") throw new PlatformError("INTERNAL", "the ImageReview answer has no status.allowed");
  return status as ReviewStatus;
}

/** Upstream's webhookError: with defaultAllow the Pod is admitted and marked; otherwise refused with the error. */
function failed(config: ImagePolicyConfig, a: AdmissionAttributes, obj: ApiObject, ctx: AdmissionContext, err: PlatformError): void {
  const suffix = ctx.names.suffix;
  ctx.logger.warn({ error: err.message, name: a.name, namespace: a.namespace }, `image policy webhook backend failed; the Pod is ${config.defaultAllow ? "admitted (defaultAllow)" : "refused"}`);
  if (!config.defaultAllow) throw admissionForbidden(a, err.message);
  a.annotate?.(`imagepolicywebhook.image-policy.${suffix}/failed-open`, "true");
  obj.metadata.annotations = { ...obj.metadata.annotations, [`alpha.image-policy.${suffix}/failed-open`]: "true" };
}
