// The approving controller against a real in-process API server with RBAC: SubjectAccessReview decides node-agent client requests.
import { describe, expect, it } from "vitest";
import { findCondition } from "../../../src/api/conditions.js";
import type { SubjectAccessReview, SubjectAccessReviewSpec } from "../../../src/api/types/authorization.js";
import type { CertificateSigningRequest } from "../../../src/api/types/csr.js";
import type { ResourceClient } from "../../../src/client/types.js";
import type { ServingApprovalPolicy } from "../../../signers/serving-approval.js";
import { ApprovingController } from "../../../src/controller/controllers/approving.js";
import { controllerResources } from "../../../src/controller/controllers/controller-set.js";
import { ControllerMetrics } from "../../../src/controller/metrics.js";
import { decide, eventsFor, nodeClientCsr, startHarness, stopAfterEach, type Harness, type UserName } from "./harness.js";
import { newCsrObject } from "../../fixtures/csr.js";
import { PlatformError } from "../../../src/errors.js";
import { until } from "../../fixtures/wait.js";

interface World {
  readonly h: Harness;
  readonly reviews: SubjectAccessReviewSpec[];
  readonly metrics: ControllerMetrics;
  /** Creates the request as `user` (the server records the requester). */
  create(user: UserName, csr: CertificateSigningRequest): Promise<void>;
  get(name: string): Promise<CertificateSigningRequest>;
}

const track = stopAfterEach();

async function world(o: { servingPolicy?: ServingApprovalPolicy; maxDeniedRetries?: number; reviewCacheTtlMs?: number; loseAnswers?: number } = {}): Promise<World> {
  const h = await startHarness();
  // The first `loseAnswers` approvals are committed and their answers lost, as when the server restarts mid-write.
  let lose = o.loseAnswers ?? 0;
  const csrs = Object.assign(Object.create(h.api.csrs) as ResourceClient<CertificateSigningRequest>, {
    update: async (obj: CertificateSigningRequest, p?: Parameters<ResourceClient<CertificateSigningRequest>["update"]>[1]) => {
      const written = await h.api.csrs.update(obj, p);
      if (lose-- > 0) throw new PlatformError("STORAGE_UNAVAILABLE", "connection lost: socket hang up");
      return written;
    },
  });
  const reviews: SubjectAccessReviewSpec[] = [];
  const real = h.api.subjectAccessReviews;
  const counting = Object.assign(Object.create(real) as ResourceClient<SubjectAccessReview>, {
    create: (obj: SubjectAccessReview, p?: { signal?: AbortSignal }) => {
      reviews.push(obj.spec);
      return real.create(obj, p);
    },
  });
  const metrics = new ControllerMetrics();
  const controller = new ApprovingController({
    csrs,
    reviews: counting,
    informer: h.csrInformer,
    events: h.events,
    names: h.names,
    clock: h.clock,
    metrics,
    ...(o.servingPolicy && { servingPolicy: o.servingPolicy }),
    ...(o.maxDeniedRetries !== undefined && { maxDeniedRetries: o.maxDeniedRetries }),
    ...(o.reviewCacheTtlMs !== undefined && { reviewCacheTtlMs: o.reviewCacheTtlMs }),
  });
  const stop = new AbortController();
  track(h, stop);
  await h.startInformers();
  await controller.start(stop.signal);
  return {
    h,
    reviews,
    metrics,
    create: async (user, csr) => void (await controllerResources(h.client(user), h.names).csrs.create(csr)),
    get: (name) => h.admin.csrs.get(name),
  };
}

const approved = (w: World, name: string) =>
  until(async () => ((c) => (findCondition(c, "Approved") ? c : undefined))(await w.get(name)), `${name} to be approved`);

/** Lets the controller see a later request through, so it had every chance to act on the earlier ones. */
async function settle(w: World): Promise<void> {
  await w.create("node1", await nodeClientCsr(w.h.names, "node-1", { name: "marker" }));
  await approved(w, "marker");
}

describe("ApprovingController: node-agent client requests", () => {
  it("counts an approval whose answer was lost, and records its Event, once the cache shows it landed", async () => {
    const w = await world({ loseAnswers: 1 });
    await w.create("node1", await nodeClientCsr(w.h.names, "node-1"));
    const csr = await approved(w, "node-1-client");
    await until(async () => ((await w.metrics.registry.metrics()).includes('platform_ca_csr_approved_total{signer="platform.io/apiserver-client-nodeagent"} 1') ? true : undefined), "the approval to be counted");
    expect((await eventsFor(w.h, csr)).map((e) => e.reason)).toEqual(["AutoApproved"]);
    await settle(w);
    expect(await w.metrics.registry.metrics()).toMatch(/platform_ca_csr_approved_total\{signer="platform\.io\/apiserver-client-nodeagent"\} 2\n/);
  });

  it.each([
    ["the node itself (selfnodeclient)", "node1" as const, "node-1", ["selfnodeclient"]],
    ["a bootstrapper for a new node (nodeclient)", "bootstrapper" as const, "node-2", ["nodeclient"]],
  ])("approves a request from %s after a SubjectAccessReview", async (_name, user, node, subresources) => {
    const w = await world();
    await w.create(user, await nodeClientCsr(w.h.names, node));
    const csr = await approved(w, `${node}-client`);
    expect(findCondition(csr, "Approved")).toMatchObject({ status: "True", reason: "AutoApproved", message: "Auto approving node-agent client certificate after SubjectAccessReview." });
    expect(w.reviews.map((r) => r.resourceAttributes?.subresource)).toEqual(subresources);
    expect(w.reviews[0]).toMatchObject({ user: csr.spec.username, groups: csr.spec.groups, resourceAttributes: { verb: "create", resource: "certificatesigningrequests", group: w.h.names.certificates } });
    const events = await eventsFor(w.h, csr);
    expect(events.map((e) => [e.type, e.reason, e.action])).toEqual([["Normal", "AutoApproved", "Approve"]]);
    expect(await w.metrics.registry.metrics()).toMatch(/platform_ca_csr_approved_total\{signer="platform\.io\/apiserver-client-nodeagent"\} 1/);
  });

  it("approves from a cached copy without managedFields, and the server keeps the requester's fields beside the approver's", async () => {
    const w = await world();
    await w.create("bootstrapper", await nodeClientCsr(w.h.names, "node-5"));
    await approved(w, "node-5-client");
    expect(w.h.csrInformer.get("node-5-client")?.metadata).not.toHaveProperty("managedFields");
    const managed = (await w.get("node-5-client")).metadata.managedFields ?? [];
    const entry = (subresource: string | undefined) => managed.find((m) => m.subresource === subresource);
    expect(entry(undefined)).toMatchObject({ operation: "Update", fieldsV1: { "f:spec": { "f:request": {}, "f:signerName": {} } } });
    expect(entry("approval")).toMatchObject({ operation: "Update", fieldsV1: { "f:status": { "f:conditions": {} } } });
    expect(managed).toHaveLength(2);
  });

  it("leaves a request pending when the review says no, asking again with backoff a bounded number of times", async () => {
    const w = await world({ maxDeniedRetries: 3 });
    await w.create("mallory", await nodeClientCsr(w.h.names, "node-3"));
    await until(() => (w.reviews.length >= 1 ? true : undefined), "the first review");
    // Backoff starts at 1 s and doubles: 1 + 2 + 4 s cover three retries; a long wait after adds nothing.
    for (let i = 0; i < 10; i++) await w.h.clock.advance(4000);
    await until(() => (w.reviews.length === 4 ? true : undefined), "four reviews in all");
    await w.h.clock.advance(3_600_000);
    expect(w.reviews.length).toBe(4);
    expect(w.reviews.every((r) => r.user === "mallory" && r.resourceAttributes?.subresource === "nodeclient")).toBe(true);
    expect(await w.metrics.registry.metrics()).toMatch(/platform_ca_csr_approval_reviews_total\{result="denied"\} 4\n/);
    const csr = await w.get("node-3-client");
    expect(csr.status?.conditions ?? []).toEqual([]);
  });

  it("does not let a node approve a request for another node", async () => {
    const w = await world({ maxDeniedRetries: 0 });
    await w.create("node1", await nodeClientCsr(w.h.names, "node-4"));
    await settle(w);
    expect(w.reviews.filter((r) => r.user === "system:node:node-1").map((r) => r.resourceAttributes?.subresource)).toEqual(["nodeclient", "selfnodeclient"]);
    expect((await w.get("node-4-client")).status?.conditions ?? []).toEqual([]);
  });

  it.each([
    ["an organization other than system:nodes", { o: ["developers"] }],
    ["a DNS name", { dns: ["node-5.example"] }],
    ["a server usage", { usages: ["digital signature", "server auth"] }],
  ])("does not approve (nor review) a client request with %s", async (_name, options) => {
    const w = await world();
    await w.create("bootstrapper", await nodeClientCsr(w.h.names, "node-5", options));
    await settle(w);
    expect((await w.get("node-5-client")).status?.conditions ?? []).toEqual([]);
    expect(w.reviews.map((r) => r.user)).toEqual(["system:node:node-1"]);
  });

  it("reuses an allowed review of the same requester for the TTL, then asks again", async () => {
    const w = await world({ reviewCacheTtlMs: 10_000 });
    await w.create("bootstrapper", await nodeClientCsr(w.h.names, "node-7"));
    await approved(w, "node-7-client");
    await w.create("bootstrapper", await nodeClientCsr(w.h.names, "node-8"));
    await approved(w, "node-8-client");
    expect(w.reviews.map((r) => r.user)).toEqual(["system:bootstrap:abcdef"]);
    // Another requester is asked about on its own.
    await w.create("node1", await nodeClientCsr(w.h.names, "node-1"));
    await approved(w, "node-1-client");
    expect(w.reviews.map((r) => r.user)).toEqual(["system:bootstrap:abcdef", "system:node:node-1"]);
    await w.h.clock.advance(10_001);
    await w.create("bootstrapper", await nodeClientCsr(w.h.names, "node-9"));
    await approved(w, "node-9-client");
    expect(w.reviews.map((r) => r.user)).toEqual(["system:bootstrap:abcdef", "system:node:node-1", "system:bootstrap:abcdef"]);
    const metrics = await w.metrics.registry.metrics();
    expect(metrics).toMatch(/platform_ca_csr_approval_reviews_total\{result="allowed"\} 3\n/);
    expect(metrics).toMatch(/platform_ca_csr_approval_reviews_total\{result="reused"\} 1\n/);
    expect(metrics).toMatch(/platform_ca_csr_approval_reviews_total\{result="denied"\} 0\n/);
  });

  it("asks for every request with a TTL of 0", async () => {
    const w = await world({ reviewCacheTtlMs: 0 });
    for (const node of ["node-7", "node-8"]) {
      await w.create("bootstrapper", await nodeClientCsr(w.h.names, node));
      await approved(w, `${node}-client`);
    }
    expect(w.reviews.map((r) => r.user)).toEqual(["system:bootstrap:abcdef", "system:bootstrap:abcdef"]);
  });

  it("leaves requests a person already decided alone", async () => {
    const w = await world();
    await w.create("bootstrapper", await nodeClientCsr(w.h.names, "node-6"));
    await decide(w.h, "node-6-client", "Denied");
    await settle(w);
    const csr = await w.get("node-6-client");
    expect(csr.status?.conditions?.map((c) => c.type)).toEqual(["Denied"]);
  });
});

const servingCsr = (w: World, node: string, o: { dns?: string[]; ip?: string[]; expirationSeconds?: number } = {}) =>
  newCsrObject({
    names: w.h.names,
    name: `${node}-serving`,
    cn: `system:node:${node}`,
    o: ["system:nodes"],
    signerName: w.h.names.signers.nodeagentServing,
    usages: ["digital signature", "server auth"],
    dns: o.dns ?? [`${node}.nodes.example.com`],
    ip: o.ip ?? ["10.1.2.3"],
    ...(o.expirationSeconds !== undefined && { expirationSeconds: o.expirationSeconds }),
  });

const POLICY: ServingApprovalPolicy = { dnsPatterns: ["{node}.nodes.example.com"], ipCidrs: ["10.0.0.0/8"], maxExpirationSeconds: 86_400 };

describe("ApprovingController: node-agent serving requests", () => {
  it("never approves a serving request without a policy", async () => {
    const w = await world();
    await w.create("node1", await servingCsr(w, "node-1", { expirationSeconds: 3600 }));
    await settle(w);
    expect((await w.get("node-1-serving")).status?.conditions ?? []).toEqual([]);
  });

  it("approves a serving request that fits the opt-in policy", async () => {
    const w = await world({ servingPolicy: POLICY });
    await w.create("node1", await servingCsr(w, "node-1", { expirationSeconds: 3600 }));
    const csr = await approved(w, "node-1-serving");
    expect(findCondition(csr, "Approved")).toMatchObject({ reason: "AutoApproved", message: "Auto approving node-agent serving certificate under the serving approval policy." });
    expect(w.reviews).toEqual([]);
  });

  it.each([
    ["a DNS name of another node", { dns: ["node-2.nodes.example.com"], expirationSeconds: 3600 }, "node1" as const],
    ["an IP outside the CIDRs", { ip: ["192.168.1.1"], expirationSeconds: 3600 }, "node1" as const],
    ["a lifetime above the maximum", { expirationSeconds: 2 * 86_400 }, "node1" as const],
    ["no lifetime while the policy has a maximum", {}, "node1" as const],
    ["a requester that is not the node", { expirationSeconds: 3600 }, "bootstrapper" as const],
  ])("leaves a serving request with %s for a person", async (_name, options, user) => {
    const w = await world({ servingPolicy: POLICY });
    await w.create(user, await servingCsr(w, "node-1", options));
    await settle(w);
    expect((await w.get("node-1-serving")).status?.conditions ?? []).toEqual([]);
  });
});
