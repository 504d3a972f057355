// --tracing-config-file and --egress-selector-config-file as processes: a bad file fails with its problem before anything
// is created; a good one starts the server (a deprecated selection name is warned about).
import { existsSync, writeFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { ensureBuilt } from "../e2e/apiserver-process.js";
import { startUp } from "../e2e/up-process.js";
import { CLI, runCli } from "./fixtures.js";
import { startProcess } from "../fixtures/process.js";
import { tempDir } from "../fixtures/temp-dir.js";

beforeAll(() => ensureBuilt(), 240_000);

const TRACING = "apiVersion: apiserver.config.platform.io/v1\nkind: TracingConfiguration\n";
const EGRESS = "apiVersion: apiserver.platform.io/v1beta1\nkind: EgressSelectorConfiguration\n";

function file(dir: string, name: string, text: string): string {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
}

describe("--tracing-config-file and --egress-selector-config-file", () => {
  it.each([
    ["tracing: a wrong apiVersion", "up", "--tracing-config-file", "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\n", /^error: invalid tracing configuration .*tracing\.yaml: expected `apiVersion` one of "apiserver\.config\.platform\.io\/v1", /],
    ["tracing: an unknown field", "apiserver", "--tracing-config-file", `${TRACING}samplingRate: 10\n`, /^error: invalid tracing configuration .*: unknown field `samplingRate`; known fields: apiVersion, kind, endpoint, samplingRatePerMillion$/m],
    ["tracing: an invalid value", "up", "--tracing-config-file", `${TRACING}samplingRatePerMillion: 2000000\n`, /expected `samplingRatePerMillion` a whole number from 0 to 1000000, got 2000000$/m],
    ["tracing: an unreadable path", "apiserver", "--tracing-config-file", undefined, /^error: cannot read tracing configuration .*missing\.yaml: ENOENT$/m],
    ["egress: a wrong apiVersion", "up", "--egress-selector-config-file", "apiVersion: apiserver.config.platform.io/v1\nkind: EgressSelectorConfiguration\negressSelections: []\n", /^error: invalid egress selector configuration .*: expected `apiVersion` one of "apiserver\.platform\.io\/v1beta1", "apiserver\.platform\.io\/v1alpha1", got "apiserver\.config\.platform\.io\/v1"$/m],
    ["egress: an unknown field", "apiserver", "--egress-selector-config-file", `${EGRESS}egressSelections:\n- name: cluster\n  connection: {proxyProtocol: Direct}\n  conection: {}\n`, /unknown field `egressSelections\[0\]\.conection`; known fields: name, connection$/m],
    ["egress: GRPC", "up", "--egress-selector-config-file", `${EGRESS}egressSelections:\n- name: etcd\n  connection: {proxyProtocol: GRPC, transport: {uds: {udsName: /run/k.sock}}}\n`, /expected `egressSelections\[0\]\.connection\.proxyProtocol` Direct or HTTPConnect \(GRPC, the konnectivity tunnel protocol, is not implemented/],
    ["egress: an https proxy without a client key", "apiserver", "--egress-selector-config-file", `${EGRESS}egressSelections:\n- name: cluster\n  connection: {proxyProtocol: HTTPConnect, transport: {tcp: {url: "https://p:8131", tlsConfig: {clientCert: /etc/hosts}}}}\n`, /expected `egressSelections\[0\]\.connection\.transport\.tcp\.tlsConfig\.clientKey` to name a file/],
    ["egress: an unreadable path", "up", "--egress-selector-config-file", undefined, /^error: cannot read egress selector configuration .*missing\.yaml: ENOENT$/m],
  ])("refuses %s (%s) with the message, before creating anything", async (_name, command, flag, text, message) => {
    const dir = tempDir();
    const dataDir = join(dir, "data");
    const path = text === undefined ? join(dir, "missing.yaml") : file(dir, flag.startsWith("--tracing") ? "tracing.yaml" : "egress.yaml", text);
    const r = await runCli([command, "--data-dir", dataDir, "--listen", "127.0.0.1:0", flag, path]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(existsSync(dataDir)).toBe(false);
  });

  it("the controller manager refuses a bad tracing file before connecting anywhere", async () => {
    const dir = tempDir();
    const r = await runCli(["controller", "--tracing-config-file", file(dir, "tracing.yaml", `${TRACING}endpoint: collector\n`)]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: invalid tracing configuration .*tracing\.yaml: expected `endpoint` a collector address `host:port` \(or http:\/\/host:port, https:\/\/host:port\), got "collector"$/m);
  });

  it("starts with both files, warning that `master` is read as controlplane", async () => {
    const dir = tempDir();
    const egress = file(dir, "egress.yaml", `${EGRESS}egressSelections:\n- name: master\n  connection: {proxyProtocol: Direct}\n`);
    // Every request sampled, and no collector listening: the spans are dropped with a warning, the stop is clean.
    const tracing = file(dir, "tracing.yaml", `${TRACING}endpoint: 127.0.0.1:1\nsamplingRatePerMillion: 1000000\n`);
    const up = await startUp({ command: "apiserver", args: ["--egress-selector-config-file", egress, "--tracing-config-file", tracing] });
    try {
      expect(up.stderr()).toMatch(/"msg":"egressSelections\[0\]\.name: \\"master\\" is deprecated, read as \\"controlplane\\""/);
      expect(up.stderr()).toMatch(/"endpoint":"127\.0\.0\.1:1","samplingRatePerMillion":1000000,"msg":"tracing on"/);
      const status = await new Promise<number>((resolve, reject) => httpsGet(`${up.address}/healthz`, { rejectUnauthorized: false }, (res) => (res.resume(), resolve(res.statusCode!))).once("error", reject));
      expect(status).toBe(200);
    } finally {
      expect(await up.stop()).toBe(0);
    }
    expect(up.stderr()).toMatch(/"endpoint":"127\.0\.0\.1:1","err":\{.*ECONNREFUSED.*"msg":"spans could not be sent to the collector; they are dropped/);
  });

  it("loads OpenTelemetry only with a tracing file", async () => {
    const dir = tempDir();
    // Counts, at exit, the modules of the OpenTelemetry SDK and exporter and of gRPC the process loaded (CommonJS: in
    // require.cache). @opentelemetry/api is not counted: prom-client always loads it (for exemplars).
    const probe = file(dir, "probe.cjs", 'process.on("exit", () => process.stderr.write(`loaded: ${Object.keys(require.cache).filter((p) => /@opentelemetry\\/(?!api\\/)|@grpc/.test(p)).length}\\n`));\n');
    const loaded = async (args: string[]) => {
      const { proc } = await startProcess(process.execPath, ["--require", probe, CLI, "apiserver", "--listen", "127.0.0.1:0", "--data-dir", join(tempDir(), "data"), ...args], /listening on https/, { what: "platform-ca apiserver" });
      await proc.stop();
      return Number(/^loaded: (\d+)$/m.exec(proc.stderr())?.[1]);
    };
    expect(await loaded([])).toBe(0);
    expect(await loaded(["--tracing-config-file", file(dir, "tracing.yaml", `${TRACING}endpoint: 127.0.0.1:1\n`)])).toBeGreaterThan(10);
  });
});
