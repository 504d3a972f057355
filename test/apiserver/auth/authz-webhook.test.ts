// The authorizer chain of an AuthorizationConfiguration against a real HTTPS webhook started by the test: allow, deny
// and no-opinion chains, RBAC deciding after a webhook without opinion, cache TTLs on a fake clock, match conditions,
// failure policies with the webhook down, slow, malformed or failing, retries, and reload of the file.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { groupNames } from "../../../src/api/group.js";
import type { UserInfo } from "../../../src/api/meta.js";
import type { AuthorizationAttributes, Authorizer } from "../../../src/apiserver/auth/authorizer.js";
import { buildAuthorizerChain, ReloadingAuthorizerChain, type ChainDependencies } from "../../../src/apiserver/auth/authz-chain.js";
import { loadAuthorizationConfig, type AuthorizationConfigOptions } from "../../../src/config/authorization-config.js";
import { reviewAnswer, startTestWebhookServer, type TestWebhookServer } from "../../../src/testing.js";
import { requestDeadline } from "../../../src/apiserver/webhook/deadline.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { until } from "../../fixtures/wait.js";

const names = groupNames();
const dir = tempDir();
let hook: TestWebhookServer;
let kubeconfig: string;

/** The policy: alice allowed, mallory denied, anyone else no opinion. */
function decide(body: unknown): unknown {
  const review = body as { spec: { user: string; resourceAttributes?: { subresource?: string; name?: string } } };
  const user = review.spec.user;
  if (user === "alice") return reviewAnswer(body, "status", { allowed: true, reason: "alice may" });
  if (user === "mallory") return reviewAnswer(body, "status", { allowed: false, denied: true, reason: "mallory may not" });
  return reviewAnswer(body, "status", { allowed: false, reason: "no opinion on " + user });
}

beforeAll(async () => {
  hook = await startTestWebhookServer({ decide, path: "/authorize", token: "s3cret" });
  kubeconfig = join(dir, "webhook.kubeconfig");
  writeFileSync(kubeconfig, hook.clientConfig());
});
afterAll(() => hook.close());

/** Stands for RBAC: bob is allowed, nobody is ever denied (RBAC has no denials). */
const rbac: Authorizer = { authorize: (a) => (a.user.username === "bob" ? { allowed: true, reason: "RBAC: bob's binding", evaluationErrors: [] } : { allowed: false, reason: "", evaluationErrors: [] }) };

const webhook = (over: Record<string, unknown> = {}) => ({
  type: "Webhook",
  name: "policy",
  webhook: { timeout: "2s", authorizedTTL: "5m", unauthorizedTTL: "30s", subjectAccessReviewVersion: "v1", failurePolicy: "Deny", connectionInfo: { type: "KubeConfigFile", kubeConfigFile: kubeconfig }, ...over },
});

let n = 0;
function writeConfig(authorizers: unknown[]): string {
  const file = join(dir, `authz-${n++}.yaml`);
  writeFileSync(file, stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AuthorizationConfiguration", authorizers }));
  return file;
}

async function chain(authorizers: unknown[], clock = new FakeClock(), load: AuthorizationConfigOptions = {}, deps: Partial<ChainDependencies> = {}) {
  const config = await loadAuthorizationConfig(writeConfig(authorizers), load);
  // One attempt unless a test says otherwise: backoff sleeps run on the fake clock.
  return buildAuthorizerChain(config, { rbac, names, clock, retry: { initialBackoffMs: 0, attempts: 1 }, ...deps });
}

const user = (username: string, groups: string[] = ["system:authenticated"]): UserInfo => ({ username, uid: `${username}-uid`, groups });
const approve = (username: string): AuthorizationAttributes => ({ user: user(username), verb: "approve", resourceRequest: true, group: "certificates.platform.io", resource: "signers", name: "platform.io/team" });

describe("webhook authorizer chain", () => {
  it("sends a SubjectAccessReview v1 with the request's attributes and the bearer token", async () => {
    const c = await chain([webhook()]);
    const before = hook.requests.length;
    await c.authorize({ ...approve("alice"), version: "v1", user: { ...user("alice"), extra: { "example.org/team": ["pki"] } } });
    const sent = hook.requests[before]!;
    expect(sent.path).toBe("/authorize");
    expect(sent.headers.authorization).toBe("Bearer s3cret");
    expect(sent.body).toEqual({
      apiVersion: "authorization.platform.io/v1",
      kind: "SubjectAccessReview",
      spec: { resourceAttributes: { verb: "approve", group: "certificates.platform.io", version: "v1", resource: "signers", name: "platform.io/team" }, user: "alice", groups: ["system:authenticated"], uid: "alice-uid", extra: { "example.org/team": ["pki"] } },
    });
    const beta = await chain([webhook({ subjectAccessReviewVersion: "v1beta1" })]);
    await beta.authorize({ user: user("alice"), verb: "get", resourceRequest: false, path: "/healthz" });
    expect(hook.requests.at(-1)!.body).toEqual({ apiVersion: "authorization.platform.io/v1beta1", kind: "SubjectAccessReview", spec: { nonResourceAttributes: { path: "/healthz", verb: "get" }, user: "alice", group: ["system:authenticated"], uid: "alice-uid" } });
  });

  it("lets the first allow or deny decide, goes on after no opinion, and RBAC decides when the webhook has none", async () => {
    const c = await chain([webhook(), { type: "RBAC", name: "rbac" }]);
    expect(await c.authorize(approve("alice"))).toMatchObject({ allowed: true, reason: "alice may", authorizer: "policy" });
    // A webhook's denial stops the chain: RBAC is not asked, whatever it would say.
    expect(await c.authorize(approve("mallory"))).toMatchObject({ allowed: false, denied: true, reason: "mallory may not", authorizer: "policy" });
    expect(await c.authorize(approve("bob"))).toMatchObject({ allowed: true, reason: "RBAC: bob's binding", authorizer: "rbac" });
    const none = await c.authorize(approve("dave"));
    expect(none).toMatchObject({ allowed: false, reason: "no opinion on dave" });
    expect(none.denied).toBeUndefined();
    expect(none.authorizer).toBeUndefined();
    // RBAC first: bob is allowed by RBAC before the webhook is asked.
    const rbacFirst = await chain([{ type: "RBAC", name: "rbac" }, webhook()]);
    const before = hook.requests.length;
    expect(await rbacFirst.authorize(approve("bob"))).toMatchObject({ allowed: true, authorizer: "rbac" });
    expect(hook.requests.length).toBe(before);
  });

  it("places upstream's AlwaysDeny (no opinion, \"Everything is forbidden.\") and AlwaysAllow (allowed) in the chain", async () => {
    const c = await chain([{ type: "AlwaysDeny", name: "deny" }, webhook(), { type: "AlwaysAllow", name: "allow" }]);
    // AlwaysDeny has no opinion: the webhook still decides after it, and AlwaysAllow allows whoever is left.
    expect(await c.authorize(approve("alice"))).toMatchObject({ allowed: true, authorizer: "policy" });
    expect(await c.authorize(approve("mallory"))).toMatchObject({ allowed: false, denied: true, authorizer: "policy" });
    expect(await c.authorize(approve("dave"))).toMatchObject({ allowed: true, reason: "", authorizer: "allow" });
    const denyOnly = await (await chain([{ type: "AlwaysDeny", name: "deny" }])).authorize(approve("alice"));
    expect(denyOnly).toMatchObject({ allowed: false, reason: "Everything is forbidden." });
    expect(denyOnly.denied).toBeUndefined();
  });

  it("lists each authorizer's rules for SelfSubjectRulesReview, incomplete when a webhook cannot list its own", async () => {
    const rules = [{ verbs: ["get"], apiGroups: [""], resources: ["namespaces"] }];
    const rbacWithRules = { ...rbac, rulesFor: () => ({ rules, errors: [] }) };
    const complete = await chain([{ type: "RBAC", name: "rbac" }, { type: "AlwaysDeny", name: "deny" }], undefined, {}, { rbac: rbacWithRules });
    expect(await complete.rulesFor(user("bob"), "default")).toEqual({ rules, errors: [], incomplete: false });
    const everything = await chain([{ type: "AlwaysAllow", name: "allow" }]);
    expect((await everything.rulesFor(user("bob"), "default")).rules).toEqual([{ verbs: ["*"], apiGroups: ["*"], resources: ["*"] }, { verbs: ["*"], nonResourceURLs: ["*"] }]);
    const withWebhook = await chain([webhook(), { type: "RBAC", name: "rbac" }], undefined, {}, { rbac: rbacWithRules });
    expect(await withWebhook.rulesFor(user("bob"), "default")).toEqual({ rules, errors: ['authorizer "policy" does not support user rule resolution'], incomplete: true });
  });

  it("caches allow answers for authorizedTTL and the others for unauthorizedTTL on the one clock", async () => {
    const clock = new FakeClock();
    const c = await chain([webhook({ authorizedTTL: "5m", unauthorizedTTL: "30s" })], clock);
    const calls = () => hook.requests.length;
    const start = calls();
    await c.authorize(approve("alice"));
    await c.authorize(approve("dave"));
    await c.authorize(approve("alice"));
    await c.authorize(approve("dave"));
    expect(calls() - start).toBe(2);
    await clock.advance(30_001);
    await c.authorize(approve("alice"));
    await c.authorize(approve("dave"));
    expect(calls() - start).toBe(3); // dave's no-opinion expired, alice's allow did not
    await clock.advance(5 * 60_000);
    await c.authorize(approve("alice"));
    expect(calls() - start).toBe(4);
    // Another attribute (another name) is another entry.
    await c.authorize({ ...approve("alice"), name: "platform.io/other" });
    expect(calls() - start).toBe(5);
  });

  it("does not cache what cacheAuthorizedRequests / cacheUnauthorizedRequests switch off", async () => {
    const c = await chain([webhook({ cacheAuthorizedRequests: false, cacheUnauthorizedRequests: false })]);
    const start = hook.requests.length;
    for (let i = 0; i < 2; i++) {
      await c.authorize(approve("alice"));
      await c.authorize(approve("mallory"));
    }
    expect(hook.requests.length - start).toBe(4);
  });

  it("skips the webhook (no opinion) when a CEL match condition is false and applies the failure policy when one fails", async () => {
    const conditions = (...expressions: string[]) => ({ matchConditionSubjectAccessReviewVersion: "v1", matchConditions: expressions.map((expression) => ({ expression })) });
    const c = await chain([webhook(conditions("request.user != 'alice'", "'system:authenticated' in request.groups")), { type: "RBAC", name: "rbac" }]);
    const start = hook.requests.length;
    const skipped = await c.authorize(approve("alice"));
    expect(skipped).toMatchObject({ allowed: false });
    expect(skipped.denied).toBeUndefined();
    expect(hook.requests.length).toBe(start);
    // bob matches, the webhook has no opinion and RBAC allows him; mallory matches and the webhook denies.
    expect(await c.authorize(approve("bob"))).toMatchObject({ allowed: true, authorizer: "rbac" });
    expect(await c.authorize(approve("mallory"))).toMatchObject({ denied: true, authorizer: "policy" });
    expect(hook.requests.length).toBe(start + 2);
    // A non-resource request has no resourceAttributes: evaluating fails, and the failure policy decides.
    const healthz: AuthorizationAttributes = { user: user("mallory"), verb: "get", resourceRequest: false, path: "/healthz" };
    const namespaced = "request.resourceAttributes.namespace == 'pki'";
    const deny = await chain([webhook(conditions(namespaced)), { type: "RBAC", name: "rbac" }]);
    expect(await deny.authorize(healthz)).toMatchObject({ allowed: false, denied: true, authorizer: "policy", evaluationErrors: [`match condition ${JSON.stringify(namespaced)} failed: evaluation failed: No such key: resourceAttributes`] });
    const noOpinion = await chain([webhook({ ...conditions(namespaced), failurePolicy: "NoOpinion" }), { type: "RBAC", name: "rbac" }]);
    expect(await noOpinion.authorize({ ...healthz, user: user("bob") })).toMatchObject({ allowed: true, authorizer: "rbac" });
    // Any false condition skips the webhook even when another one fails.
    const mixed = await chain([webhook(conditions(namespaced, "request.user == 'nobody'")), { type: "RBAC", name: "rbac" }]);
    expect((await mixed.authorize(healthz)).denied).toBeUndefined();
    expect(hook.requests.length).toBe(start + 2);
  });

  describe("failure policies", () => {
    const outage = async (behaviour: TestWebhookServer["behaviour"], failurePolicy: string, delayMs = 0) => {
      const clock = new FakeClock();
      const c = await chain([webhook({ failurePolicy, timeout: "1s" }), { type: "RBAC", name: "rbac" }], clock);
      hook.behaviour = behaviour;
      hook.delayMs = delayMs;
      try {
        const before = hook.requests.length;
        const pending = Promise.all([c.authorize(approve("alice")), c.authorize(approve("bob"))]);
        if (delayMs > 0) {
          await until(() => hook.requests.length >= before + 2, "the webhook to receive both reviews");
          await clock.advance(1000);
        }
        return await pending;
      } finally {
        hook.behaviour = "normal";
        hook.delayMs = 0;
      }
    };

    it.each([
      ["down", "down" as const, 0, "socket hang up|ECONNRESET|reset"],
      ["slow", "normal" as const, 3000, "no answer within the timeout \\(1000 ms\\)"],
      ["malformed", "malformed" as const, 0, "the answer is not JSON"],
      ["failing with 500", { status: 500 }, 0, "answered 500"],
    ])("webhook %s: Deny refuses even RBAC's users, NoOpinion lets RBAC decide", async (_what, behaviour, delayMs, why) => {
      const [alice, bob] = await outage(behaviour, "Deny", delayMs);
      expect(alice).toMatchObject({ allowed: false, denied: true, authorizer: "policy" });
      expect(alice.reason).toMatch(new RegExp(`webhook authorizer "policy" failed \\(failurePolicy Deny\\): .*(${why})`));
      expect(bob).toMatchObject({ allowed: false, denied: true, authorizer: "policy" });
      const [alice2, bob2] = await outage(behaviour, "NoOpinion", delayMs);
      expect(alice2).toMatchObject({ allowed: false });
      expect(alice2.denied).toBeUndefined();
      expect(alice2.reason).toMatch(/failurePolicy NoOpinion/);
      expect(bob2).toMatchObject({ allowed: true, authorizer: "rbac" });
    });

    it("two slow webhooks share the request's deadline: each waits min(its timeout, what remains), then its failure policy", async () => {
      const clock = new FakeClock();
      const slow = (name: string) => ({ ...webhook({ failurePolicy: "NoOpinion", timeout: "5s" }), name });
      const c = await chain([slow("policy-a"), slow("policy-b"), { type: "RBAC", name: "rbac" }], clock);
      hook.delayMs = 3000;
      try {
        const before = hook.requests.length;
        // A 3 s request: without its deadline the two webhooks would hold it 5 s each.
        const deadline = requestDeadline("3s", false, clock)!;
        const pending = c.authorize({ ...approve("carol"), deadline });
        await until(() => hook.requests.length > before, "the first webhook to be asked");
        await clock.advance(3000);
        const decision = await pending;
        // Both failed on the request's deadline (the second without a call, the time being spent); nobody had an opinion.
        expect(decision.allowed).toBe(false);
        expect(hook.requests.length).toBe(before + 1);
        expect(decision.evaluationErrors).toEqual(["the request's deadline (timeout 3s) passed", "the request's deadline (timeout 3s) passed"]);
        expect(decision.reason).toBe('webhook authorizer "policy-a" failed (failurePolicy NoOpinion): the request\'s deadline (timeout 3s) passed; webhook authorizer "policy-b" failed (failurePolicy NoOpinion): the request\'s deadline (timeout 3s) passed');
        // Under its own timeout alone the first webhook would still be waiting.
        const own = requestDeadline(undefined, false, clock)!;
        const later = c.authorize({ ...approve("carol"), deadline: own });
        await until(() => hook.requests.length > before + 1, "the first webhook to be asked again");
        await clock.advance(3000);
        expect(hook.requests.length).toBe(before + 2);
        await clock.advance(2000);
        await until(() => hook.requests.length > before + 2, "the second webhook to be asked after the first timed out");
        await clock.advance(5000);
        expect((await later).evaluationErrors).toEqual(["no answer within the timeout (5000 ms)", "no answer within the timeout (5000 ms)"]);
        own.cancel();
      } finally {
        hook.delayMs = 0;
      }
    });

    it("refuses a request timeout that is not a duration with upstream's message, and caps one above 60 s", async () => {
      expect(() => requestDeadline("soon", false)).toThrow("invalid timeout specified in the request URL");
      expect(requestDeadline("10s", true)).toBeUndefined();
      const clock = new FakeClock();
      const capped = requestDeadline("2h", false, clock)!;
      await clock.advance(59_999);
      expect(capped.signal.aborted).toBe(false);
      await clock.advance(1);
      expect((capped.signal.reason as Error).message).toBe("the request's deadline (timeout 60s) passed");
    });

    it("refuses an answer of another kind or version, and does not cache a failure", async () => {
      const clock = new FakeClock();
      const wrong = await startTestWebhookServer({ decide: (body) => ({ ...reviewAnswer(body, "status", { allowed: true }), apiVersion: "authorization.k8s.io/v1" }) });
      const file = join(dir, "wrong.kubeconfig");
      writeFileSync(file, wrong.clientConfig());
      try {
        const c = await chain([{ ...webhook(), webhook: { ...webhook().webhook, connectionInfo: { type: "KubeConfigFile", kubeConfigFile: file } } }], clock);
        for (let i = 0; i < 2; i++) expect((await c.authorize(approve("alice"))).reason).toContain("the answer is not a SubjectAccessReview authorization.platform.io/v1");
        expect(wrong.requests).toHaveLength(2);
      } finally {
        await wrong.close();
      }
    });

    it("retries a 5xx with upstream's backoff on the clock, within the timeout", async () => {
      const clock = new FakeClock();
      const c = await chain([webhook({ timeout: "10s" })], clock, {}, { retry: { initialBackoffMs: 500, jitter: 0, attempts: 5 } });
      hook.behaviour = { status: 503 };
      const before = hook.requests.length;
      const pending = c.authorize(approve("alice"));
      await until(() => hook.requests.length === before + 1, "the first attempt");
      hook.behaviour = "normal";
      await clock.advance(499);
      expect(hook.requests.length).toBe(before + 1);
      await clock.advance(1);
      expect(await pending).toMatchObject({ allowed: true, authorizer: "policy" });
      expect(hook.requests.length).toBe(before + 2);
    });
  });

  it("reloads a changed file, and keeps the current chain when the new file is invalid", async () => {
    const clock = new FakeClock();
    const file = writeConfig([webhook()]);
    const logged: string[] = [];
    const logger = { info: () => undefined, warn: () => undefined, error: (_o: unknown, msg: string) => logged.push(msg), debug: () => undefined } as unknown as ChainDependencies["logger"];
    const reloading = await ReloadingAuthorizerChain.start({ file, rbac, names, clock, logger, retry: { initialBackoffMs: 0, attempts: 1 }, intervalMs: 1000 });
    try {
      expect(await reloading.authorize(approve("bob"))).toMatchObject({ allowed: false });
      writeFileSync(file, stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AuthorizationConfiguration", authorizers: [{ type: "RBAC", name: "rbac" }] }));
      await clock.advance(1000);
      await until(() => reloading.current.authorizers.length === 1 && reloading.current.authorizers[0]!.name === "rbac", "the reloaded chain");
      expect(await reloading.authorize(approve("bob"))).toMatchObject({ allowed: true, authorizer: "rbac" });
      writeFileSync(file, stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AuthorizationConfiguration", authorizers: [{ type: "RBAC", name: "rbac" }, webhook({ timeout: "60s" })] }));
      await clock.advance(1000);
      await until(() => logged.length > 0, "the refused reload to be logged");
      expect(logged).toEqual(["authorization configuration invalid; the current authorizers stay"]);
      expect(reloading.current.authorizers.map((a) => a.name)).toEqual(["rbac"]);
      // A missing file keeps the chain too, and is logged once however many checks see it.
      rmSync(file);
      for (let i = 0; i < 3; i++) expect(await reloading.reload()).toBe(false);
      expect(logged).toEqual(["authorization configuration invalid; the current authorizers stay", "authorization configuration unreadable; the current authorizers stay"]);
      expect(await reloading.authorize(approve("bob"))).toMatchObject({ allowed: true, authorizer: "rbac" });
    } finally {
      reloading.stop();
    }
  });
});
