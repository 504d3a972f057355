// A Webhook authorizer: the request's attributes sent as a SubjectAccessReview, the answer cached for the configured
// TTLs, match conditions, and the failure policy when the call fails, times out or the answer is malformed.
import type { LRUCache } from "lru-cache";
import type { GroupNames } from "../../api/group.js";
import type { WebhookAuthorizerConfig } from "../../config/authorization-config.js";
import { conditionsHold } from "../../cel/index.js";
import { isPlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { RestConfig } from "../../client/rest-config.js";
import type { Clock } from "../../time/clock.js";
import { ttlCache } from "../../time/ttl-cache.js";
import { WebhookClient, type Dialer, type WebhookRetry } from "../webhook/client.js";
import { callDeadline } from "../webhook/deadline.js";
import type { AuthorizationAttributes, Authorizer, AuthorizerDecision } from "./authorizer.js";

/** Upstream's DefaultAuthWebhookRetryBackoff: 500 ms, ×1.5, 20% jitter, 5 attempts. */
export const AUTHZ_WEBHOOK_RETRY: WebhookRetry = { initialBackoffMs: 500, factor: 1.5, jitter: 0.2, attempts: 5 };
/** Answers kept per authorizer (upstream's LRU expiring cache size). */
const CACHE_SIZE = 8192;

/** What a webhook call ended in, as upstream's apiserver_authorization_webhook_evaluations_total labels it. */
export type WebhookOutcome = "success" | "timeout" | "error";

/** What every webhook authorizer of a chain shares. */
export interface WebhookAuthorizerDependencies {
  readonly names: GroupNames;
  readonly clock: Clock;
  readonly logger?: Logger;
  readonly dial?: Dialer;
  readonly retry?: WebhookRetry;
  /** Told of every call made (not of answers from the cache), for metrics. */
  readonly observe?: (name: string, outcome: WebhookOutcome, durationMs: number) => void;
}

export interface WebhookAuthorizerOptions extends WebhookAuthorizerDependencies {
  readonly name: string;
  readonly config: WebhookAuthorizerConfig;
  /** The webhook's client config (from its kubeConfigFile). */
  readonly rest: RestConfig;
}

type Review = Record<string, unknown> & { spec: Record<string, unknown> };

/** The SubjectAccessReview of `a` in `version` (v1beta1 names the groups `group`), empty fields left out as upstream. */
export function subjectAccessReviewOf(a: AuthorizationAttributes, group: string, version: string): Review {
  const u = a.user;
  const drop = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== "" && !(Array.isArray(v) && v.length === 0)));
  const spec = drop({
    ...(a.resourceRequest
      ? { resourceAttributes: drop({ namespace: a.namespace, verb: a.verb, group: a.group, version: a.version, resource: a.resource, subresource: a.subresource, name: a.name }) }
      : { nonResourceAttributes: drop({ path: a.path, verb: a.verb }) }),
    user: u.username,
    [version === "v1beta1" ? "group" : "groups"]: u.groups ?? [],
    uid: u.uid,
    extra: u.extra && Object.keys(u.extra).length > 0 ? u.extra : undefined,
  });
  return { apiVersion: `${group}/${version}`, kind: "SubjectAccessReview", spec };
}

const noOpinion = (reason: string, errors: string[] = []): AuthorizerDecision => ({ allowed: false, reason, evaluationErrors: errors });

/** Reads the webhook's answer; a wrong kind or version, or a status without a boolean `allowed`, is malformed. */
function readAnswer(body: Buffer, apiVersion: string): AuthorizerDecision {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString("utf8"));
  } catch {
    throw new Error("the answer is not JSON");
  }
  const d = doc as { apiVersion?: unknown; kind?: unknown; status?: { allowed?: unknown; denied?: unknown; reason?: unknown; evaluationError?: unknown } };
  if (typeof doc !== "object" || doc === null || d.kind !== "SubjectAccessReview" || d.apiVersion !== apiVersion) throw new Error(`the answer is not a SubjectAccessReview ${apiVersion}`);
  const s = d.status;
  if (typeof s !== "object" || s === null || typeof s.allowed !== "boolean" || (s.denied !== undefined && typeof s.denied !== "boolean")) throw new Error("the answer has no status with a boolean `allowed`");
  const reason = typeof s.reason === "string" ? s.reason : "";
  const errors = typeof s.evaluationError === "string" && s.evaluationError !== "" ? [s.evaluationError] : [];
  // As upstream: allowed wins over denied; neither is no opinion.
  if (s.allowed) return { allowed: true, reason, evaluationErrors: errors };
  return s.denied === true ? { allowed: false, denied: true, reason, evaluationErrors: errors } : noOpinion(reason, errors);
}

export class WebhookAuthorizer implements Authorizer {
  readonly name: string;
  readonly #o: WebhookAuthorizerOptions;
  readonly #client: WebhookClient;
  readonly #cache: LRUCache<string, AuthorizerDecision>;
  readonly #logger: Logger;
  readonly #apiVersion: string;

  constructor(o: WebhookAuthorizerOptions) {
    this.name = o.name;
    this.#o = o;
    this.#logger = o.logger ?? silentLogger();
    this.#apiVersion = `${o.names.authorization}/${o.config.subjectAccessReviewVersion}`;
    this.#client = new WebhookClient({ config: o.rest, timeoutMs: o.config.timeoutMs, retry: o.retry ?? AUTHZ_WEBHOOK_RETRY, clock: o.clock, ...(o.dial && { dial: o.dial }) });
    this.#cache = ttlCache(CACHE_SIZE, o.clock);
  }

  async authorize(a: AuthorizationAttributes): Promise<AuthorizerDecision> {
    const c = this.#o.config;
    if (c.matchConditions.length > 0) {
      const { spec } = subjectAccessReviewOf(a, this.#o.names.authorization, "v1");
      // All must hold for the webhook to be asked; any false one skips it (no opinion), else an error is a failure.
      const holds = conditionsHold(c.matchConditions, (m) => m.matches(spec), (m) => JSON.stringify(m.expression));
      if (holds === false) return noOpinion("");
      if (holds !== true) return this.#failed(holds.error);
    }
    const review = subjectAccessReviewOf(a, this.#o.names.authorization, c.subjectAccessReviewVersion);
    const key = JSON.stringify(review.spec);
    const cached = this.#cache.get(key);
    if (cached) return cached;
    // The request's time already spent (by earlier webhooks): no call, the failure policy decides.
    const signal = a.deadline?.signal;
    if (signal?.aborted) return this.#failed((signal.reason as Error).message);
    const started = this.#o.clock.now();
    // One deadline for the call, its retries and their backoff: its timeout or the request's, whichever ends first.
    const deadline = callDeadline(this.#o.clock, c.timeoutMs, signal);
    let decision: AuthorizerDecision;
    try {
      const answer = await this.#client.post(JSON.stringify(review), deadline.signal);
      decision = readAnswer(answer.body, this.#apiVersion);
    } catch (err) {
      const expired = deadline.why();
      this.#o.observe?.(this.name, expired ? "timeout" : "error", this.#o.clock.now() - started);
      return this.#failed(expired ?? (isPlatformError(err) ? err.message : (err as Error).message));
    } finally {
      deadline.cancel();
    }
    this.#o.observe?.(this.name, "success", this.#o.clock.now() - started);
    if (decision.allowed ? c.cacheAuthorizedRequests : c.cacheUnauthorizedRequests) {
      this.#cache.set(key, decision, { ttl: decision.allowed ? c.authorizedTTLMs : c.unauthorizedTTLMs });
    }
    return decision;
  }

  /** The failure policy's decision: Deny refuses, NoOpinion lets the next authorizer decide. Never cached. */
  #failed(why: string): AuthorizerDecision {
    const deny = this.#o.config.failurePolicy === "Deny";
    this.#logger.warn({ authorizer: this.name, failurePolicy: this.#o.config.failurePolicy, reason: why }, "authorization webhook failed");
    const reason = `webhook authorizer ${JSON.stringify(this.name)} failed (failurePolicy ${this.#o.config.failurePolicy}): ${why}`;
    return deny ? { allowed: false, denied: true, reason, evaluationErrors: [why] } : noOpinion(reason, [why]);
  }

  close(): void {
    this.#client.close();
  }
}
