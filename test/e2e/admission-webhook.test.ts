// `platform-ca up` with admission webhooks from files: kubectl sees the mutating webhook's label and warning, the
// validating webhook's denial in upstream's words, and upstream's 504 Timeout when a slow webhook outlasts the
// request (--request-timeout 2s); a bad manifest stops the start before the data directory exists.
import { execFile } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { runCli } from "../cli/fixtures.js";
import { jsonPatch, startAdmissionWebhook, writeWebhookManifest, type TestAdmissionWebhook } from "../fixtures/admission-webhook.js";
import { newCsrObject } from "../fixtures/csr.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { until } from "../fixtures/wait.js";
import { ensureBuilt, kubectlWith, type Kubectl } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";

const FORBIDDEN_SIGNER = "example.com/forbidden";
const PENDING_SIGNER = "example.com/pending";

/** kubectl run without blocking: the webhook it reaches through the server answers from this process. */
function kubectlAsync(kubectl: Kubectl, args: readonly string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile("kubectl", [...kubectl.baseArgs, "--request-timeout", "20s", ...args], { encoding: "utf8", timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) || 1 : 0, stdout, stderr }),
    );
    child.stdin!.end(input ?? "");
  });
}

/** The AdmissionConfiguration that points both webhook plugins at their manifest directories. */
function admissionFile(dir: string): string {
  const entry = (phase: string) => ({
    name: `${phase}AdmissionWebhook`,
    configuration: { apiVersion: "apiserver.config.platform.io/v1", kind: "WebhookAdmissionConfiguration", kubeConfigFile: "", staticManifestsDir: join(dir, phase.toLowerCase()) },
  });
  const file = join(dir, "admission.yaml");
  writeFileSync(file, stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AdmissionConfiguration", plugins: [entry("Mutating"), entry("Validating")] }));
  return file;
}

describe("platform-ca up with admission webhooks", () => {
  let up: UpProcess;
  let kubectl: Kubectl;
  let hook: TestAdmissionWebhook;

  beforeAll(async () => {
    ensureBuilt();
    hook = await startAdmissionWebhook(async (request, path) => {
      // Slow answers, for the request deadline.
      if ((path === "/label" && request.name?.startsWith("slow-")) || path === "/late") await new Promise((resolve) => setTimeout(resolve, 4000));
      if (path === "/late") return { allowed: true };
      // Slow, but well within the request's time: its round trip is what the SLI latency leaves out.
      if (path === "/pause") {
        await new Promise((resolve) => setTimeout(resolve, 1200));
        return { allowed: true };
      }
      if (path === "/label") {
        const op = request.object?.metadata.labels ? { op: "add", path: "/metadata/labels/reviewed", value: "yes" } : { op: "add", path: "/metadata/labels", value: { reviewed: "yes" } };
        return { allowed: true, ...jsonPatch([op]), warnings: [`labelled ${request.name ?? "a new object"}`] };
      }
      if (request.object?.spec?.signerName === FORBIDDEN_SIGNER) return { allowed: false, status: { code: 403, message: `signer ${FORBIDDEN_SIGNER} is not allowed here` } };
      if (request.object?.spec?.signerName === PENDING_SIGNER) return { allowed: false, status: { code: 409, reason: "AlreadyExists", message: "a CSR for this signer is pending" } };
      return { allowed: true };
    });
    const dir = tempDir();
    // A CSR labelled review=skip is not sent to the labelling webhook (upstream's matchConditions, CEL).
    const matchConditions = [{ name: "not-skipped", expression: "!has(object.metadata.labels) || !('review' in object.metadata.labels) || object.metadata.labels.review != 'skip'" }];
    writeWebhookManifest(join(dir, "mutating"), "label", "Mutating", [{ name: "label.hooks.example.com", url: `${hook.url}/label`, caBundle: hook.caBundle, matchConditions }]);
    // Slow for CSRs named late-*, and ignored when it fails: its timeoutSeconds is longer than any request may take.
    // Validating, so it runs beside the signer webhook (which must answer before the deadline: it fails closed).
    const lateOnly = [{ name: "late-only", expression: "object.metadata.name.startsWith('late-')" }];
    writeWebhookManifest(join(dir, "validating"), "late", "Validating", [{ name: "late.hooks.example.com", url: `${hook.url}/late`, caBundle: hook.caBundle, matchConditions: lateOnly, timeoutSeconds: 10, failurePolicy: "Ignore" }]);
    writeWebhookManifest(join(dir, "validating"), "signer", "Validating", [{ name: "signer.hooks.example.com", url: `${hook.url}/signer`, caBundle: hook.caBundle }]);
    const pausedOnly = [{ name: "paused-only", expression: "object.metadata.name.startsWith('paused-')" }];
    writeWebhookManifest(join(dir, "validating"), "pause", "Validating", [{ name: "pause.hooks.example.com", url: `${hook.url}/pause`, caBundle: hook.caBundle, matchConditions: pausedOnly, timeoutSeconds: 5 }]);
    up = await startUp({ dataDir: join(dir, "data"), args: ["--admission-control-config-file", admissionFile(dir), "--request-timeout", "2s"] });
    kubectl = kubectlWith(up.adminConfig);
  }, 240_000);
  afterAll(async () => {
    if (up?.child.exitCode === null) await up.stop();
    await hook?.close();
  });

  it("labels a CSR and passes the webhook's warning to kubectl", async () => {
    const csr = await newCsrObject({ name: "hooked-1", cn: "hooked" });
    const r = await kubectlAsync(kubectl, ["create", "-f", "-"], JSON.stringify(csr));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("certificatesigningrequest.certificates.platform.io/hooked-1 created");
    expect(r.stderr).toMatch(/^Warning: labelled hooked-1$/m);
    expect((await kubectlAsync(kubectl, ["get", "csr", "hooked-1", "-o", "jsonpath={.metadata.labels.reviewed}"])).stdout).toBe("yes");
  });

  it("does not call the labelling webhook for a CSR its match condition excludes", async () => {
    const csr = await newCsrObject({ name: "skipped-1", cn: "skipped", metadata: { labels: { review: "skip" } } });
    const before = hook.reviews.length;
    const r = await kubectlAsync(kubectl, ["create", "-f", "-"], JSON.stringify(csr));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).not.toContain("Warning: labelled");
    expect((await kubectlAsync(kubectl, ["get", "csr", "skipped-1", "-o", "jsonpath={.metadata.labels}"])).stdout).toBe('{"review":"skip"}');
    // Only the validating webhook was asked.
    expect(hook.reviews.slice(before).map((v) => v.path)).toEqual(["/signer"]);
  });

  it("refuses a CSR for the forbidden signer with upstream's denial", async () => {
    const csr = await newCsrObject({ name: "hooked-2", cn: "hooked", signerName: FORBIDDEN_SIGNER });
    const r = await kubectlAsync(kubectl, ["create", "-f", "-"], JSON.stringify(csr));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`Error from server (Forbidden): error when creating "STDIN": admission webhook "signer.hooks.example.com" denied the request: signer ${FORBIDDEN_SIGNER} is not allowed here`);
    expect((await kubectlAsync(kubectl, ["get", "csr", "hooked-2"])).stderr).toMatch(/NotFound/);
  });

  it("answers 504 Timeout at the request's own timeout and ends the slow webhook's call then (failurePolicy Fail: not stored)", async () => {
    const csr = await newCsrObject({ name: "slow-1", cn: "slow" });
    const started = Date.now();
    // kubectl would replace the parameter with its own --request-timeout: 0 sends none.
    const r = await kubectlAsync(kubectl, ["--request-timeout", "0", "create", "--raw", "/apis/certificates.platform.io/v1/certificatesigningrequests?timeout=1s", "-f", "-"], JSON.stringify(csr));
    expect(Date.now() - started).toBeLessThan(3500);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("Error from server (Timeout): Timeout: request did not complete within the allotted timeout");
    // The webhook's failure came after the answer: the server logs it as upstream's post-timeout activity.
    const line = await until(() => up.stderr().split("\n").find((l) => l.includes("post-timeout activity") && l.includes("timeout=1s")), "the post-timeout log line");
    expect(JSON.parse(line).err.message).toBe(`Internal error occurred: failed calling webhook "label.hooks.example.com": failed to call webhook: the request's deadline (timeout 1s) passed`);
    expect((await kubectlAsync(kubectl, ["get", "csr", "slow-1"])).stderr).toMatch(/NotFound/);
  });

  it("answers 504 Timeout at --request-timeout when kubectl asks for longer; the write goes on and is stored (failurePolicy Ignore)", async () => {
    const csr = await newCsrObject({ name: "late-1", cn: "late" });
    const started = Date.now();
    // kubectl sends ?timeout=10s; the server's 2s caps it.
    const r = await kubectlAsync(kubectl, ["--request-timeout", "10s", "create", "-f", "-"], JSON.stringify(csr));
    const took = Date.now() - started;
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Error from server (Timeout): error when creating "STDIN": Timeout: request did not complete within the allotted timeout');
    expect(took).toBeGreaterThanOrEqual(2000);
    expect(took).toBeLessThan(4000);
    // The webhook's call ended with the request's time, and Ignore let the create go on: stored after its 504.
    const got = await kubectlAsync(kubectl, ["get", "csr", "late-1", "-o", "jsonpath={.metadata.name}"]);
    expect(got.stdout, got.stderr).toBe("late-1");
  });

  it("leaves the webhooks' round trips out of apiserver_request_sli_duration_seconds, as upstream's SLI does", async () => {
    // A create's scope is `resource`, as upstream labels it.
    const labels = 'verb="POST",group="certificates.platform.io",version="v1",resource="certificatesigningrequests",subresource="",scope="resource",component="apiserver"';
    const read = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}.+]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
    const scrape = async () => {
      const text = (await kubectlAsync(kubectl, ["get", "--raw", "/metrics"])).stdout;
      return {
        count: read(text, `apiserver_request_duration_seconds_count{${labels.replace('verb="POST",', 'verb="POST",dry_run="",')}}`),
        underOne: read(text, `apiserver_request_duration_seconds_bucket{le="1",${labels.replace('verb="POST",', 'verb="POST",dry_run="",')}}`),
        sliCount: read(text, `apiserver_request_sli_duration_seconds_count{${labels}}`),
        sliUnderOne: read(text, `apiserver_request_sli_duration_seconds_bucket{le="1",${labels}}`),
      };
    };
    const before = await scrape();
    const started = Date.now();
    const r = await kubectlAsync(kubectl, ["create", "-f", "-"], JSON.stringify(await newCsrObject({ name: "paused-1", cn: "paused" })));
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1200);
    const after = await scrape();
    // The create took over a second, all but a few milliseconds of it the webhook's: its latency is over 1 s, its SLI under.
    expect(after.count - before.count).toBe(1);
    expect(after.underOne - before.underOne).toBe(0);
    expect(after.sliCount - before.sliCount).toBe(1);
    expect(after.sliUnderOne - before.sliUnderOne).toBe(1);
  });

  it("passes the webhook's own status code and reason to kubectl", async () => {
    const csr = await newCsrObject({ name: "hooked-3", cn: "hooked", signerName: PENDING_SIGNER });
    const r = await kubectlAsync(kubectl, ["create", "-f", "-", "-v=6"], JSON.stringify(csr));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/POST https:\/\/\S+\/certificatesigningrequests\S* 409 Conflict/);
    expect(r.stderr).toContain('Error from server (AlreadyExists): error when creating "STDIN": admission webhook "signer.hooks.example.com" denied the request: a CSR for this signer is pending');
  });
});

describe("platform-ca apiserver: a bad webhook manifest stops the start", () => {
  beforeAll(() => ensureBuilt(), 240_000);

  it("names the manifest and the field; nothing is created", async () => {
    const dir = tempDir();
    const manifest = writeWebhookManifest(join(dir, "validating"), "bad", "Validating", [{ name: "bad.hooks.example.com", url: "https://127.0.0.1:1/x", timeoutSeconds: 45 }]);
    writeWebhookManifest(join(dir, "mutating"), "none", "Mutating", []);
    const r = await runCli(["apiserver", "--admission-control-config-file", admissionFile(dir), "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toBe(`error: invalid webhook manifest ${manifest}: expected \`webhooks[0].timeoutSeconds\` a whole number from 1 to 30, got 45\n`);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });

  it("names the match condition that does not compile, with its position", async () => {
    const dir = tempDir();
    const manifest = writeWebhookManifest(join(dir, "validating"), "bad", "Validating", [{ name: "bad.hooks.example.com", url: "https://127.0.0.1:1/x", matchConditions: [{ name: "who", expression: "request.userInfo.usrname == 'x'" }] }]);
    writeWebhookManifest(join(dir, "mutating"), "none", "Mutating", []);
    const r = await runCli(["apiserver", "--admission-control-config-file", admissionFile(dir), "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toBe(`error: invalid webhook manifest ${manifest}: expected \`webhooks[0].matchConditions[0].expression\` a CEL expression that compiles (type error: No such key: usrname at line 1, column 18), got "request.userInfo.usrname == 'x'"\n`);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });
});
