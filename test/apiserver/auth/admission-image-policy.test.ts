// ImagePolicyWebhook against a real HTTPS backend: the ImageReview sent, denials in upstream's words, the answer cache,
// defaultAllow with the backend down (failed-open annotations), audit annotations; its configuration's refusals.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { ApiObject } from "../../../src/api/meta.js";
import { AdmissionChain, type AdmissionAttributes } from "../../../src/apiserver/auth/admission.js";
import { admissionPlugins } from "../../../src/apiserver/auth/admission-plugins.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { RequestDeadlineExceeded } from "../../../src/apiserver/webhook/deadline.js";
import { loadAdmissionConfig } from "../../../src/config/admission-config.js";
import { createTestPki, type TestPki } from "../../client/fixtures/pki.js";
import { startServer, type TestServer } from "../../client/fixtures/server.js";
import { tempDir, writeFiles } from "../../fixtures/temp-dir.js";
import { names, refusal, StaticLister, user } from "./fixtures.js";

let pki: TestPki;
let backend: TestServer;
let answer: (spec: { containers: { image: string }[] }) => Record<string, unknown>;

beforeAll(async () => {
  pki = createTestPki();
  backend = await startServer((rec, res) => {
    const spec = (JSON.parse(rec.body) as { spec: { containers: { image: string }[] } }).spec;
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ apiVersion: "imagepolicy.platform.io/v1alpha1", kind: "ImageReview", status: answer(spec) }));
  }, { tls: { cert: pki.server.cert, key: pki.server.key } });
});
afterAll(async () => {
  await backend.close();
  pki.remove();
});
beforeEach(() => {
  backend.requests.length = 0;
  answer = (spec) => (spec.containers.every((c) => c.image.startsWith("registry.example.com/")) ? { allowed: true, auditAnnotations: { checked: "yes" } } : { allowed: false, reason: "only registry.example.com images" });
});

/** A chain with ImagePolicyWebhook alone, configured through an AdmissionConfiguration as the server reads it. */
async function chainWith(policy: Record<string, unknown>, server = backend.url): Promise<AdmissionChain> {
  const dir = tempDir();
  writeFiles(dir, {
    "backend.conf": stringify({ apiVersion: "v1", kind: "Config", clusters: [{ name: "b", cluster: { server, "certificate-authority": pki.caPath } }], users: [{ name: "u", user: {} }], contexts: [{ name: "c", context: { cluster: "b", user: "u" } }], "current-context": "c" }),
    "admission.yaml": stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AdmissionConfiguration", plugins: [{ name: "ImagePolicyWebhook", configuration: { imagePolicy: { kubeConfigFile: "backend.conf", retryBackoff: 1, ...policy } } }] }),
  });
  const file = await loadAdmissionConfig(join(dir, "admission.yaml"));
  return new AdmissionChain({ names, authorizer: new RbacAuthorizer({ names, lister: new StaticLister({}) }), ...admissionPlugins(["ImagePolicyWebhook"], { configs: file.configs }) });
}

function pod(images: string[], annotations: Record<string, string> = {}): ApiObject {
  return { apiVersion: "v1", kind: "Pod", metadata: { name: "p", namespace: "apps", annotations }, spec: { containers: images.map((image, i) => ({ name: `c${i}`, image })), initContainers: [{ name: "init", image: "registry.example.com/init:1" }] } };
}

function attrs(annotations: Record<string, string>, o: Partial<AdmissionAttributes> = {}): AdmissionAttributes {
  return { operation: "CREATE", group: "", version: "v1", resource: "pods", kind: "Pod", namespace: "apps", name: "p", user: user({ username: "carol" }), dryRun: false, annotate: (k, v) => void (annotations[k] = v), ...o };
}

describe("ImagePolicyWebhook", () => {
  it("sends the images (init containers too), the image-policy annotations and the namespace; admits what the backend allows", async () => {
    const chain = await chainWith({});
    const audit: Record<string, string> = {};
    await chain.admit(attrs(audit), pod(["registry.example.com/app:2"], { "a.image-policy.platform.io/ticket": "T-1", "other.example.com/x": "y" }), undefined);
    expect(JSON.parse(backend.requests[0]!.body)).toEqual({
      apiVersion: "imagepolicy.platform.io/v1alpha1",
      kind: "ImageReview",
      spec: { containers: [{ image: "registry.example.com/app:2" }, { image: "registry.example.com/init:1" }], annotations: { "a.image-policy.platform.io/ticket": "T-1" }, namespace: "apps" },
    });
    expect(audit).toEqual({ "imagepolicywebhook.image-policy.platform.io/checked": "yes" });
  });

  it("refuses what the backend denies, with upstream's message, and leaves other writes alone", async () => {
    const chain = await chainWith({});
    const err = await refusal(chain.admit(attrs({}), pod(["docker.io/evil:latest"]), undefined));
    expect([err.code, err.message]).toEqual(["FORBIDDEN", 'pods "p" is forbidden: image policy webhook backend denied one or more images: only registry.example.com images']);
    answer = () => ({ allowed: false });
    const bare = await refusal((await chainWith({})).admit(attrs({}), pod(["x"]), undefined));
    expect(bare.message).toBe('pods "p" is forbidden: one or more images rejected by webhook backend');
    backend.requests.length = 0;
    await chain.admit(attrs({}, { subresource: "status", operation: "UPDATE" }), pod(["docker.io/evil:latest"]), pod([]));
    await chain.admit(attrs({}, { operation: "DELETE" }), undefined, pod(["docker.io/evil:latest"]));
    expect(backend.requests).toHaveLength(0);
  });

  it("caches allow answers for allowTTL; denyTTL -1 caches no denial", async () => {
    const chain = await chainWith({ allowTTL: 60, denyTTL: -1 });
    for (let i = 0; i < 3; i++) await chain.admit(attrs({}), pod(["registry.example.com/app:2"]), undefined);
    expect(backend.requests).toHaveLength(1);
    for (let i = 0; i < 2; i++) await refusal(chain.admit(attrs({}), pod(["docker.io/evil:1"]), undefined));
    expect(backend.requests).toHaveLength(3);
  });

  it("with the backend down: defaultAllow admits and marks the Pod failed-open; otherwise the Pod is refused", async () => {
    const down = await startServer(() => undefined);
    const url = down.url.replace("http:", "https:");
    await down.close();
    const open = await chainWith({ defaultAllow: true }, url);
    const audit: Record<string, string> = {};
    const p = pod(["docker.io/evil:1"]);
    await open.admit(attrs(audit), p, undefined);
    expect(p.metadata.annotations).toEqual({ "alpha.image-policy.platform.io/failed-open": "true" });
    expect(audit).toEqual({ "imagepolicywebhook.image-policy.platform.io/failed-open": "true" });
    const closed = await chainWith({ defaultAllow: false }, url);
    const err = await refusal(closed.admit(attrs({}), pod(["registry.example.com/app:2"]), undefined));
    expect(err.message).toMatch(/^pods "p" is forbidden: .*ECONNREFUSED/);
  });

  it("asks the backend within the request's deadline: once it passed, the failure rules apply", async () => {
    const expired = new AbortController();
    expired.abort(new RequestDeadlineExceeded(1000));
    const before = backend.requests.length;
    const err = await refusal((await chainWith({ defaultAllow: false })).admit(attrs({}, { deadline: expired }), pod(["registry.example.com/app:3"]), undefined));
    expect(err.message).toBe(`pods "p" is forbidden: the request's deadline (timeout 1s) passed`);
    const p = pod(["registry.example.com/app:3"]);
    await (await chainWith({ defaultAllow: true })).admit(attrs({}, { deadline: expired }), p, undefined);
    expect(p.metadata.annotations).toEqual({ "alpha.image-policy.platform.io/failed-open": "true" });
    expect(backend.requests.length).toBe(before);
  });

  it("the example of docs/admission.md loads (with its backend file beside it)", async () => {
    const text = readFileSync(new URL("../../../docs/admission.md", import.meta.url), "utf8");
    const example = [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes("name: ImagePolicyWebhook"))!;
    const dir = tempDir();
    writeFiles(dir, { "image-policy-backend.conf": stringify({ apiVersion: "v1", kind: "Config", clusters: [{ name: "b", cluster: { server: "https://policy.example.com" } }], users: [{ name: "u", user: {} }], contexts: [{ name: "c", context: { cluster: "b", user: "u" } }], "current-context": "c" }), "admission.yaml": example });
    const policy = (await loadAdmissionConfig(join(dir, "admission.yaml"))).configs.ImagePolicyWebhook!;
    expect([policy.allowTtlMs, policy.denyTtlMs, policy.retryBackoffMs, policy.defaultAllow, policy.rest?.server]).toEqual([50_000, 50_000, 500, true, "https://policy.example.com"]);
  });

  it("refuses bad configuration values and an unreadable kubeConfigFile, naming the field or file", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ allowTTL: 2000 }, "expected `plugins[0].configuration.imagePolicy.allowTTL` seconds from 1 to 1800, 0 for the default (300) or -1 for no caching, got 2000"],
      [{ denyTTL: -2 }, "expected `plugins[0].configuration.imagePolicy.denyTTL` a whole number ≥ -1, got -2"],
      [{ retryBackoff: 400_000 }, "expected `plugins[0].configuration.imagePolicy.retryBackoff` milliseconds from 1 to 300000, or 0 for the default (500), got 400000"],
      [{ defaultAllow: "yes" }, "expected `plugins[0].configuration.imagePolicy.defaultAllow` true or false"],
      [{ kubeConfigFile: "missing.conf" }, "invalid ImagePolicyWebhook kubeConfigFile "],
    ];
    for (const [policy, message] of cases) {
      const err = await refusal(chainWith(policy));
      expect(err.code).toBe("CONFIG_INVALID");
      expect(err.message).toContain(message);
    }
  });
});
