// `platform-ca up --admission-control-config-file`: with a tight server-wide EventRateLimit the controllers still issue
// every CSR (their events are refused with 429, the certificates are not); a bad file or plugin flag stops the start
// with one line before the data directory exists.
import { spawnSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { runCli } from "../cli/fixtures.js";
import { newCsrObject } from "../fixtures/csr.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { ensureBuilt, type Kubectl, kubectlWith } from "./apiserver-process.js";
import { startUp, type UpProcess } from "./up-process.js";

const ERL = { apiVersion: "eventratelimit.admission.platform.io/v1alpha1", kind: "Configuration", limits: [{ type: "Server", qps: 1, burst: 1 }] };
const ADMISSION = { apiVersion: "apiserver.config.platform.io/v1", kind: "AdmissionConfiguration", plugins: [{ name: "EventRateLimit", path: "event-rate-limit.yaml" }] };
const CSR_COUNT = 6;

describe("platform-ca up with a tight server-wide EventRateLimit", () => {
  let up: UpProcess;
  let kubectl: Kubectl;

  beforeAll(async () => {
    ensureBuilt();
    const dir = tempDir();
    writeFileSync(join(dir, "admission.yaml"), stringify(ADMISSION));
    writeFileSync(join(dir, "event-rate-limit.yaml"), stringify(ERL));
    up = await startUp({ dataDir: join(dir, "data"), args: ["--admission-control-config-file", join(dir, "admission.yaml")] });
    kubectl = kubectlWith(up.adminConfig);
  }, 240_000);
  afterAll(async () => {
    if (up?.child.exitCode === null) await up.stop();
  });

  it("issues every node-agent CSR while the controllers' events are refused with 429", async () => {
    const csrs = await Promise.all(Array.from({ length: CSR_COUNT }, (_, i) => newCsrObject({ name: `limited-${i}`, cn: `system:node:limited-${i}`, o: ["system:nodes"] })));
    kubectl(["create", "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: csrs }));
    let issued: string[] = [];
    for (let i = 0; i < 300 && issued.length < CSR_COUNT; i++) {
      issued = kubectl(["get", "csr", "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.certificate}{\"\\n\"}{end}"])
        .split("\n")
        .filter((line) => /^limited-\d+=\S+$/.test(line));
      if (issued.length < CSR_COUNT) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(issued.map((line) => line.split("=")[0]).sort()).toEqual(csrs.map((c) => c.metadata.name).sort());
    for (const line of issued) expect(Buffer.from(line.slice(line.indexOf("=") + 1), "base64").toString()).toMatch(/^-----BEGIN CERTIFICATE-----/);
    // The limit was in force during that work: Event writes were refused.
    const metrics = kubectl(["get", "--raw", "/metrics"]);
    expect(metrics).toMatch(/^apiserver_request_total\{[^}]*resource="events"[^}]*code="429"[^}]*\} [1-9]\d*$/m);
  });

  it("answers Event creates past the limit with 429 and Retry-After, which kubectl waits out", async () => {
    // The controllers' recorder retries its throttled Events after each Retry-After, sharing the one server-wide
    // token with kubectl: wait until it has written them all (the count of Events stays put for 3 s).
    const count = () => kubectl(["get", "events", "-A", "-o", "name"]).split("\n").filter(Boolean).length;
    for (let last = -1, stableSince = Date.now(), deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 500))) {
      const n = count();
      if (n !== last) [last, stableSince] = [n, Date.now()];
      else if (Date.now() - stableSince >= 3000) break;
    }
    const event = (name: string) => ({ apiVersion: "v1", kind: "Event", metadata: { name }, involvedObject: { kind: "Pod", namespace: "default", name: "p" }, reason: "Test", message: "m", type: "Normal" });
    // Three in one go: with burst 1 and qps 1 at least the second finds the bucket empty.
    const list = { apiVersion: "v1", kind: "List", items: [0, 1, 2].map((i) => event(`flood-${i}`)) };
    const r = spawnSync("kubectl", [...kubectl.baseArgs, "create", "-f", "-", "-v", "8"], { input: JSON.stringify(list), encoding: "utf8", timeout: 60_000 });
    expect(r.stderr).toMatch(/Response Status: 429 Too Many Requests/);
    expect(r.stderr).toMatch(/Retry-After: 1\b/);
    // client-go waits the Retry-After out and sends the create again (it logs no body of a retried answer).
    expect(r.stderr).toMatch(/Got a Retry-After 1s response for attempt 1 to https:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces\/default\/events/);
    expect(r.status, r.stderr.slice(-2000)).toBe(0);
    expect(r.stdout.trim().split("\n")).toEqual(["event/flood-0 created", "event/flood-1 created", "event/flood-2 created"]);
  });
});

describe("platform-ca apiserver: a bad admission file or plugin flag stops the start before anything is created", () => {
  beforeAll(() => ensureBuilt(), 240_000);

  it.each([
    ["a wrong apiVersion", { ...ADMISSION, apiVersion: "apiserver.config.k8s.io/v1" }, ERL, [], /^error: invalid admission configuration \S+bad\.yaml: expected `apiVersion` one of "apiserver\.config\.platform\.io\/v1", "apiserver\.platform\.io\/v1alpha1", got "apiserver\.config\.k8s\.io\/v1"\n$/],
    ["an unknown field", { ...ADMISSION, plugins: [{ name: "EventRateLimit", paht: "event-rate-limit.yaml" }] }, ERL, [], /^error: invalid admission configuration \S+bad\.yaml: unknown field `plugins\[0\]\.paht`; known fields: name, path, configuration\n$/],
    ["an invalid value", ADMISSION, { ...ERL, limits: [{ type: "Namespace", qps: 1, burst: 5, cacheSize: -1 }] }, [], /^error: invalid EventRateLimit configuration \S+event-rate-limit\.yaml: expected `limits\[0\]\.cacheSize` not to be negative, got -1\n$/],
    ["an unreadable path", { ...ADMISSION, plugins: [{ name: "EventRateLimit", path: "gone.yaml" }] }, ERL, [], /^error: invalid admission configuration \S+bad\.yaml: expected `plugins\[0\]\.path` a readable file \(relative to the directory of \S+bad\.yaml\): cannot read EventRateLimit configuration \S+gone\.yaml: ENOENT, got "gone\.yaml"\n$/],
    ["an unknown plugin name", { ...ADMISSION, plugins: [{ name: "AlwaysPullImages" }] }, ERL, [], /^error: invalid admission configuration \S+bad\.yaml: expected `plugins\[0\]\.name` a known admission plugin \(.*\), got "AlwaysPullImages"\n$/],
    ["an unknown plugin in --enable-admission-plugins", ADMISSION, ERL, ["--enable-admission-plugins", "EventRateLimit,NodeRestriction"], /^error: expected `--enable-admission-plugins` to list known admission plugins \(.*\), got "NodeRestriction"\n$/],
    ["disabling a plugin that always runs", ADMISSION, ERL, ["--disable-admission-plugins", "CertificateSigningRequestRequester"], /^error: expected `--disable-admission-plugins` not to name CertificateSigningRequestRequester, which always runs: .*\n$/],
  ])("refuses %s", async (_what, admission, erl, extra, message) => {
    const dir = tempDir();
    writeFileSync(join(dir, "bad.yaml"), stringify(admission));
    writeFileSync(join(dir, "event-rate-limit.yaml"), stringify(erl));
    const r = await runCli(["apiserver", "--admission-control-config-file", join(dir, "bad.yaml"), "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0", ...extra]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });

  it("refuses an unreadable admission file", async () => {
    const dir = tempDir();
    const r = await runCli(["apiserver", "--admission-control-config-file", join(dir, "missing.yaml"), "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: cannot read admission configuration \S+missing\.yaml: ENOENT\n$/);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });

  it("refuses the admission flags with --insecure-local, which has no admission chain", async () => {
    const dir = tempDir();
    const r = await runCli(["apiserver", "--insecure-local", "--admission-control-config-file", join(dir, "a.yaml"), "--data-dir", join(dir, "data"), "--listen", "127.0.0.1:0"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/--insecure-local has no authentication and no admission chain, so --admission-control-config-file cannot be used with it/);
    expect(existsSync(join(dir, "data"))).toBe(false);
  });
});
