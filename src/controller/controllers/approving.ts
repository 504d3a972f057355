// The approving controller: approves node-agent client CSRs the requester may create (SubjectAccessReview), and serving CSRs under an opt-in policy.
import type { GroupNames } from "../../api/group.js";
import { CsrConditionReason, isApproved, isDenied, isFailed, isIssued } from "../../api/conditions.js";
import { SUBJECT_ACCESS_REVIEW_KIND, AUTHORIZATION_VERSION, type SubjectAccessReview } from "../../api/types/authorization.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import type { ResourceClient } from "../../client/types.js";
import { invalidOption, PlatformError, toPlatformError } from "../../errors.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { createNodeagentClientSigner } from "../../../signers/apiserver-client-nodeagent.js";
import { createNodeagentServingSigner } from "../../../signers/nodeagent-serving.js";
import type { SignerRegistry } from "../../../signers/registry.js";
import type { Signer, SigningRequest } from "../../../signers/signer.js";
import { ItemExponentialBackoff } from "../../time/backoff.js";
import type { EventRecorder } from "../event-recorder.js";
import type { Informer } from "../informer.js";
import { ServingApprover, type ServingApprovalPolicy } from "../../../signers/serving-approval.js";
import { CsrParser, setCondition, writeCsr } from "./csr-object.js";
import { AllowedReviewCache, DEFAULT_REVIEW_CACHE_TTL_MS } from "./review-cache.js";
import { Controller, type ControllerOptions } from "../controller.js";
import { UnansweredWrites } from "./unanswered.js";

/** Approvals without an answer remembered at most (the oldest forgotten first). */
const UNANSWERED_LIMIT = 16_384;

export const APPROVING_CONTROLLER = "csrapproving";

export const SERVING_APPROVED_MESSAGE = "Auto approving node-agent serving certificate under the serving approval policy.";

export interface ApprovingControllerOptions extends ControllerOptions {
  readonly csrs: ResourceClient<CertificateSigningRequest>;
  readonly reviews: ResourceClient<SubjectAccessReview>;
  readonly informer: Informer<CertificateSigningRequest>;
  readonly events: EventRecorder;
  readonly names: GroupNames;
  /** Whose validate() decides the shape of a node-agent CSR; the built-in rules when the signer is not registered. */
  readonly signers?: SignerRegistry;
  /** Approve node-agent client CSRs after a SubjectAccessReview (default true). */
  readonly autoApproveClient?: boolean;
  /** Serving CSRs are never approved without this. */
  readonly servingPolicy?: ServingApprovalPolicy;
  readonly parser?: CsrParser;
  /** A refused review is asked again with backoff this many times, then the CSR waits for a change (default 8). */
  readonly maxDeniedRetries?: number;
  /** Backoff of those retries: first delay and cap (default 1 s and 5 min). */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  /** How long an allowed review of the same requester is reused, in ms (default 10 s; 0: ask every time). */
  readonly reviewCacheTtlMs?: number;
}

/** Validation only: these signers never sign here, so they get a CA provider that has none. */
const NO_CA = { current: () => undefined };

export class ApprovingController extends Controller {
  private readonly o: ApprovingControllerOptions;
  private readonly parser: CsrParser;
  private readonly clientShape: Signer;
  private readonly servingShape: Signer;
  private readonly serving: ServingApprover | undefined;
  private readonly maxDenied: number;
  private readonly reviewed: AllowedReviewCache;
  /** Approvals without an answer (the server restarted meanwhile). */
  private readonly unanswered = new UnansweredWrites(UNANSWERED_LIMIT);

  constructor(options: ApprovingControllerOptions) {
    super(APPROVING_CONTROLLER, [options.informer], options, new ItemExponentialBackoff({ baseMs: options.retryBaseMs ?? 1000, maxMs: options.retryMaxMs ?? 300_000 }));
    const maxDenied = options.maxDeniedRetries ?? 8;
    if (!Number.isSafeInteger(maxDenied) || maxDenied < 0) throw invalidOption("maxDeniedRetries", "to be a whole number ≥ 0", maxDenied);
    this.o = options;
    this.maxDenied = maxDenied;
    this.parser = options.parser ?? new CsrParser();
    const s = options.names.signers;
    const registered = (name: string): Signer | undefined => (options.signers?.has(name) ? options.signers.get(name) : undefined);
    this.clientShape = registered(s.nodeagentClient) ?? createNodeagentClientSigner({ groupSuffix: options.names.suffix, ca: NO_CA });
    this.servingShape = registered(s.nodeagentServing) ?? createNodeagentServingSigner({ groupSuffix: options.names.suffix, ca: NO_CA });
    this.serving = options.servingPolicy ? new ServingApprover(options.servingPolicy) : undefined;
    this.reviewed = new AllowedReviewCache(options.reviewCacheTtlMs ?? DEFAULT_REVIEW_CACHE_TTL_MS, () => this.clock.now());
  }

  protected subscribe(): (() => void)[] {
    const enqueue = (csr: CertificateSigningRequest): void => {
      if (this.kind(csr) === undefined) return;
      if (!decided(csr)) this.queue.add(csr.metadata.name!);
      else this.unanswered.settle(csr);
    };
    return [this.o.informer.addHandlers({ onAdd: enqueue, onUpdate: (_old, csr) => enqueue(csr) })];
  }

  /** Which of our rules applies to the CSR's signer, if any. */
  private kind(csr: CertificateSigningRequest): "client" | "serving" | undefined {
    const name = csr.spec?.signerName;
    if (name === this.o.names.signers.nodeagentClient && this.o.autoApproveClient !== false) return "client";
    if (name === this.o.names.signers.nodeagentServing && this.serving) return "serving";
    return undefined;
  }

  protected async sync(key: string, signal: AbortSignal): Promise<void> {
    const csr = this.o.informer.get(key);
    const kind = csr && !decided(csr) ? this.kind(csr) : undefined;
    if (!csr || !kind) return;
    let request: SigningRequest;
    try {
      request = this.parser.request(csr);
    } catch (err) {
      // Not ours to judge: the signing controller marks an unreadable request Failed once it is approved by hand.
      return void this.log.debug({ name: key, err: toPlatformError(err).message }, "request cannot be read; not approving");
    }
    const shape = (kind === "client" ? this.clientShape : this.servingShape).validate(request);
    if (!shape.ok) return void this.log.debug({ name: key, reason: shape.reason }, "not a node-agent request; not approving");
    if (kind === "serving") {
      const problem = this.serving!.problem(request);
      if (problem) return void this.log.info({ name: key, reason: problem }, "serving request left for manual approval");
      return this.approve(csr, SERVING_APPROVED_MESSAGE, signal);
    }
    const allowedBy = await this.authorized(request, signal);
    if (allowedBy) return this.approve(csr, this.o.names.approvalMessages[allowedBy], signal);
    const tries = this.queue.numRequeues(key);
    if (tries >= this.maxDenied) {
      return void this.log.info({ name: key, user: request.username, tries }, "requester may not create node-agent client certificates; left pending");
    }
    throw new PlatformError("FORBIDDEN", `user ${JSON.stringify(request.username ?? "")} may not create node-agent client certificates (yet)`, { retryable: true });
  }

  /** `selfnodeclient` when the requester is the node the CN names (then also `nodeclient`), else `nodeclient`: the one allowed, if any. */
  private async authorized(request: SigningRequest, signal: AbortSignal): Promise<"selfnodeclient" | "nodeclient" | undefined> {
    const self = request.username !== undefined && request.username === request.csr.subject.commonName;
    for (const subresource of self ? (["selfnodeclient", "nodeclient"] as const) : (["nodeclient"] as const)) {
      const review: SubjectAccessReview = {
        apiVersion: `${this.o.names.authorization}/${AUTHORIZATION_VERSION}`,
        kind: SUBJECT_ACCESS_REVIEW_KIND,
        metadata: {},
        spec: {
          ...(request.username !== undefined && { user: request.username }),
          ...(request.uid !== undefined && { uid: request.uid }),
          ...(request.groups !== undefined && { groups: [...request.groups] }),
          ...(request.extra !== undefined && { extra: structuredClone(request.extra) as Record<string, string[]> }),
          resourceAttributes: { group: this.o.names.certificates, resource: "certificatesigningrequests", verb: "create", subresource, version: "*" },
        },
      };
      if (this.reviewed.allowed(review.spec)) {
        this.metrics?.approvalReviews.inc("reused", { result: "reused" });
        return subresource;
      }
      const answer = await this.o.reviews.create(review, { signal });
      const allowed = answer.status?.allowed === true;
      const result = allowed ? "allowed" : "denied";
      this.metrics?.approvalReviews.inc(result, { result });
      if (allowed) {
        this.reviewed.remember(review.spec);
        return subresource;
      }
    }
    return undefined;
  }

  private async approve(csr: CertificateSigningRequest, message: string, signal: AbortSignal): Promise<void> {
    const now = rfc3339(new Date(this.clock.now()));
    const reason = CsrConditionReason.AutoApproved;
    // Our own approval, committed though its answer was lost: same reason and message from the same sync.
    const landed = (fresh: CertificateSigningRequest) => fresh.status?.conditions?.some((c) => c.type === "Approved" && c.reason === reason && c.message === message && c.lastUpdateTime === now) === true;
    const record = (written: CertificateSigningRequest): void => {
      this.metrics?.csrApproved.inc(csr.spec.signerName, { signer: csr.spec.signerName });
      this.o.events.event(written, "Normal", reason, "Approve", message);
      this.log.debug({ name: csr.metadata.name, signerName: csr.spec.signerName }, "request approved");
    };
    let written: CertificateSigningRequest | undefined;
    try {
      written = await writeCsr(csr, {
        client: this.o.csrs,
        subresource: "approval",
        change: (copy) => setCondition(copy, { type: "Approved", status: "True", reason, message, lastUpdateTime: now, lastTransitionTime: now }),
        settled: decided,
        landed,
        signal,
      });
    } catch (err) {
      // Perhaps committed though unanswered: counted, and its Event recorded, when the cache shows it (subscribe).
      this.unanswered.add(csr.metadata.uid ?? "", landed, record);
      throw err;
    }
    if (written) record(written);
  }
}

/** Someone already decided: approved, denied, failed or issued. */
function decided(csr: CertificateSigningRequest): boolean {
  return isApproved(csr) || isDenied(csr) || isFailed(csr) || isIssued(csr);
}
