import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { egressSelectorApiVersions, loadEgressSelectorConfig, parseEgressSelectorConfig } from "../../src/config/egress-selector.js";
import { isPlatformError } from "../../src/errors.js";
import { tempDir, tempFile } from "../fixtures/temp-dir.js";

const doc = (egressSelections: unknown, fields: Record<string, unknown> = {}) => stringify({ apiVersion: "apiserver.platform.io/v1beta1", kind: "EgressSelectorConfiguration", egressSelections, ...fields });
const httpConnect = (transport: unknown) => ({ proxyProtocol: "HTTPConnect", transport });
const exists = (path: string) => !path.includes("missing");

function problems(text: string, options = {}): string[] {
  try {
    parseEgressSelectorConfig(text, "egress.yaml", { exists, ...options });
  } catch (err) {
    if (isPlatformError(err, "CONFIG_INVALID")) return err.causes.map((c) => c.message);
    throw err;
  }
  throw new Error("configuration was accepted");
}

describe("parseEgressSelectorConfig", () => {
  it("reads Direct and HTTPConnect selections over TCP and UDS", () => {
    const { config, warnings } = parseEgressSelectorConfig(
      doc([
        { name: "cluster", connection: httpConnect({ tcp: { url: "https://proxy:8131", tlsConfig: { caBundle: "ca.crt", clientCert: "c.crt", clientKey: "c.key" } } }) },
        { name: "controlplane", connection: httpConnect({ uds: { udsName: "/run/proxy.sock" } }) },
        { name: "etcd", connection: { proxyProtocol: "Direct" } },
      ]),
      "e",
      { exists },
    );
    expect(warnings).toEqual([]);
    expect(Object.fromEntries(config.selections)).toEqual({
      cluster: { proxyProtocol: "HTTPConnect", transport: { tcp: { url: "https://proxy:8131", tlsConfig: { caBundle: "ca.crt", clientCert: "c.crt", clientKey: "c.key" } } } },
      controlplane: { proxyProtocol: "HTTPConnect", transport: { uds: { udsName: "/run/proxy.sock" } } },
      etcd: { proxyProtocol: "Direct" },
    });
  });

  it("accepts `master` for controlplane with a deprecation warning, but not both", () => {
    const { config, warnings } = parseEgressSelectorConfig(doc([{ name: "master", connection: httpConnect({ tcp: { url: "http://proxy:3128" } }) }]), "e");
    expect([...config.selections.keys()]).toEqual(["controlplane"]);
    expect(warnings).toEqual(['egressSelections[0].name: "master" is deprecated, read as "controlplane"']);
    expect(problems(doc([{ name: "controlplane", connection: { proxyProtocol: "Direct" } }, { name: "master", connection: { proxyProtocol: "Direct" } }]))).toEqual([
      'expected `egressSelections[1].name` a selection not already configured (controlplane is listed twice), got "master"',
    ]);
  });

  it("checks apiVersion (v1beta1 and v1alpha1 only) and kind under the configured suffix", () => {
    expect(egressSelectorApiVersions("k8s.io")).toEqual(["apiserver.k8s.io/v1beta1", "apiserver.k8s.io/v1alpha1"]);
    expect(parseEgressSelectorConfig(doc([], { apiVersion: "apiserver.k8s.io/v1alpha1" }), "e", { groupSuffix: "k8s.io" }).config.selections.size).toBe(0);
    expect(problems(doc([], { apiVersion: "apiserver.config.platform.io/v1" }))).toEqual(['expected `apiVersion` one of "apiserver.platform.io/v1beta1", "apiserver.platform.io/v1alpha1", got "apiserver.config.platform.io/v1"']);
    expect(problems(doc([], { kind: "TracingConfiguration" }))).toEqual(['expected `kind` "EgressSelectorConfiguration", got "TracingConfiguration"']);
  });

  it("applies the tlsConfig rules per URL scheme", () => {
    const tcp = (url: string, tlsConfig?: unknown) => doc([{ name: "cluster", connection: httpConnect({ tcp: { url, ...(tlsConfig !== undefined && { tlsConfig }) } }) }]);
    expect(problems(tcp("http://p:1", { caBundle: "ca.crt" }))).toEqual(["expected `egressSelections[0].connection.transport.tcp.tlsConfig` to be absent with an http:// url (plain TCP to the proxy), got a mapping"]);
    expect(problems(tcp("https://p:1"))).toEqual(["expected `egressSelections[0].connection.transport.tcp.tlsConfig` to be set with an https:// url (clientCert and clientKey, optionally caBundle), got nothing"]);
    expect(problems(tcp("https://p:1", { clientCert: "c.crt" }))).toEqual([
      "expected `egressSelections[0].connection.transport.tcp.tlsConfig.clientKey` to name a file (required with an https:// url: the proxy is reached with mutual TLS), got nothing",
    ]);
    expect(problems(tcp("https://p:1", { caBundle: "missing-ca.crt", clientCert: "c.crt", clientKey: "missing.key" }))).toEqual([
      'expected `egressSelections[0].connection.transport.tcp.tlsConfig.caBundle` an existing file, got "missing-ca.crt"',
      'expected `egressSelections[0].connection.transport.tcp.tlsConfig.clientKey` an existing file, got "missing.key"',
    ]);
    expect(problems(tcp("socks5://p:1"))).toEqual(['expected `egressSelections[0].connection.transport.tcp.url` an http:// or https:// URL, got "socks5://p:1"']);
  });

  it("refuses GRPC clearly, and transports that do not fit the protocol", () => {
    expect(problems(doc([{ name: "cluster", connection: { proxyProtocol: "GRPC", transport: { uds: { udsName: "/s" } } } }]))).toEqual([
      'expected `egressSelections[0].connection.proxyProtocol` Direct or HTTPConnect (GRPC, the konnectivity tunnel protocol, is not implemented: run the proxy in HTTPConnect mode), got "GRPC"',
    ]);
    expect(problems(doc([{ name: "cluster", connection: { proxyProtocol: "Direct", transport: { uds: { udsName: "/s" } } } }]))[0]).toContain("to be absent with proxyProtocol Direct");
    expect(problems(doc([{ name: "cluster", connection: { proxyProtocol: "HTTPConnect" } }]))).toEqual(["expected `egressSelections[0].connection.transport` to be set with proxyProtocol HTTPConnect (tcp or uds), got nothing"]);
    expect(problems(doc([{ name: "cluster", connection: httpConnect({ tcp: { url: "http://p:1" }, uds: { udsName: "/s" } }) }]))[0]).toContain("to set one of `tcp` and `uds`, not both");
    expect(problems(doc([{ name: "cluster", connection: httpConnect({ uds: { udsName: "unix:///s" } }) }]))[0]).toContain("without the unix:// prefix");
    expect(problems(doc([{ name: "cluster", connection: { proxyProtocol: "Socks" } }]))).toEqual(['expected `egressSelections[0].connection.proxyProtocol` one of Direct, HTTPConnect, GRPC, got "Socks"']);
  });

  it("names unknown fields and selections", () => {
    expect(problems(doc([{ name: "cluster", connection: { proxyProtocol: "Direct", transprt: {} } }]))).toEqual([
      "unknown field `egressSelections[0].connection.transprt`; known fields: proxyProtocol, transport",
    ]);
    expect(problems(doc([{ name: "nodes", connection: { proxyProtocol: "Direct" } }]))).toEqual(['expected `egressSelections[0].name` one of controlplane, etcd, cluster (or master, deprecated), got "nodes"']);
    expect(problems(doc(undefined))).toEqual(["expected `egressSelections` to be a list of selections (name and connection), got nothing"]);
  });

  it("loads a file, checking the named files exist, and names an unreadable one", async () => {
    const dir = tempDir();
    const path = tempFile("egress.yaml", doc([{ name: "cluster", connection: httpConnect({ tcp: { url: "https://p:1", tlsConfig: { clientCert: join(dir, "c.crt"), clientKey: join(dir, "c.key") } } }) }]));
    await expect(loadEgressSelectorConfig(path)).rejects.toThrow(/invalid egress selector configuration .*egress\.yaml: 2 problems: expected `egressSelections\[0\]\.connection\.transport\.tcp\.tlsConfig\.clientCert` an existing file/);
    await expect(loadEgressSelectorConfig(join(dir, "missing.yaml"))).rejects.toThrow(/cannot read egress selector configuration .*missing\.yaml: ENOENT/);
  });
});

describe("docs/configuration.md", () => {
  it("shows an EgressSelectorConfiguration that loads (its files assumed present), and the message of a bad one", () => {
    const text = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
    const example = /```yaml\n(apiVersion: apiserver\.platform\.io\/v1beta1\nkind: EgressSelectorConfiguration[\s\S]*?)```/.exec(text)![1]!;
    const { config } = parseEgressSelectorConfig(example, "docs", { exists: () => true });
    expect([...config.selections.entries()].map(([name, c]) => `${name} ${c.proxyProtocol}`)).toEqual(["controlplane HTTPConnect", "cluster HTTPConnect", "etcd Direct"]);
    const shown = /``error:\s+(invalid egress selector configuration egress\.yaml:[\s\S]*?)``/.exec(text)![1]!.replace(/\s+/g, " ");
    expect(() => parseEgressSelectorConfig(doc([{ name: "etcd", connection: { proxyProtocol: "GRPC" } }]), "egress.yaml")).toThrow(shown);
  });
});
