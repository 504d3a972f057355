// --ca-key-kms: `up` writes its cluster CA key wrapped by the KMS plugin (openssl cannot read the file), serves and
// issues with it (the controllers' thread unwraps it too), refuses to start when the plugin is down or the flag is
// missing, and `storage rewrite --ca-key-kms` wraps the key of a data directory made without it. `controller` and
// `sign` issue with such a key file given the same flags, and refuse alike without them or the plugin.
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { csr as csrFixture, newCsrObject } from "../fixtures/csr.js";
import { startProcess, tryRun, type Proc } from "../fixtures/process.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { encryptionYaml } from "../apiserver/encryption/fixtures.js";
import { CLI, REPO, runCli } from "../cli/fixtures.js";
import { ensureBuilt, kubectlWith } from "./apiserver-process.js";
import { startUp } from "./up-process.js";

const dir = tempDir("pca-ca-key-kms-");
const socket = join(dir, "kms.sock");
const config = join(dir, "encryption.yaml");
let plugin: Proc | undefined;
const startPlugin = async () => {
  ({ proc: plugin } = await startProcess(process.execPath, [join(REPO, "dist/test/fixtures/mock-kms-main.js"), socket], /listening on/, { what: "mock KMS plugin" }));
};
beforeAll(async () => {
  ensureBuilt();
  writeFileSync(config, encryptionYaml(["secrets"], [{ kms: { name: "kms1", endpoint: `unix://${socket}` } }]), { mode: 0o600 });
  await startPlugin();
});
afterAll(async () => {
  await plugin?.stop();
});

const WITH_KMS = ["--encryption-provider-config", config, "--ca-key-kms", "kms1"];
const pkey = (path: string) => tryRun("openssl", ["pkey", "-in", path, "-noout"]);
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
/** The one line of a command that cannot reach the plugin, and of one given a wrapped key without the flags. */
const unwrapFailed = (key: string) => new RegExp(`^error: cannot unwrap ${escape(key)} with the KMS provider kms1: the KMS plugin at unix://.*kms\\.sock did not answer Decrypt`);
const flagsNeeded = (key: string) => `error: ${key} is wrapped by the KMS provider "kms1": start with --ca-key-kms kms1 and the --encryption-provider-config that defines it`;
/** Stops the plugin for `body`, then starts it again. */
async function withPluginDown(body: () => Promise<void>): Promise<void> {
  await plugin!.stop();
  plugin = undefined;
  try {
    await body();
  } finally {
    await startPlugin();
  }
}
/** status.certificate of a CSR object once issued, in a file. */
async function issuedFile(kubectl: ReturnType<typeof kubectlWith>, name: string): Promise<string> {
  let certificate = "";
  for (let i = 0; i < 100 && certificate === ""; i++) {
    certificate = kubectl(["get", "csr", name, "-o", "jsonpath={.status.certificate}"]);
    if (certificate === "") await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const path = join(dir, `${name}.crt`);
  writeFileSync(path, Buffer.from(certificate, "base64"));
  return path;
}

describe("--ca-key-kms", () => {
  it("keeps the CA key wrapped on disk, and serves and issues with it", async () => {
    const up = await startUp({ args: WITH_KMS });
    const key = join(up.dataDir, "pki", "ca.key");
    try {
      expect(readFileSync(key, "utf8")).toMatch(/^-----BEGIN PLATFORM-CA KMS WRAPPED PRIVATE KEY-----\n/);
      expect(statSync(key).mode & 0o777).toBe(0o600);
      const openssl = pkey(key);
      expect(openssl.status).not.toBe(0);
      expect(openssl.out).toMatch(/Could not (read|find) (private )?key/i);
      // admin.conf's client certificate was issued with the CA key at start.
      const conf = readFileSync(up.adminConfig, "utf8");
      const clientCert = join(dir, "admin.crt");
      writeFileSync(clientCert, Buffer.from(/client-certificate-data: (\S+)/.exec(conf)![1]!, "base64"));
      expect(tryRun("openssl", ["verify", "-CAfile", join(up.dataDir, "pki", "ca.crt"), clientCert]).out).toContain(": OK");
      // The controllers (their own thread) issue with it.
      const kubectl = kubectlWith(up.adminConfig);
      kubectl(["create", "-f", "-"], JSON.stringify(await newCsrObject({ name: "wrapped-1", cn: "system:node:wrapped-1", o: ["system:nodes"] })));
      expect(tryRun("openssl", ["verify", "-CAfile", join(up.dataDir, "pki", "ca.crt"), await issuedFile(kubectl, "wrapped-1")]).out).toContain(": OK");
    } finally {
      expect(await up.stop()).toBe(0);
    }

    // The plugin down: the start stops with one line naming the key, the provider and the plugin.
    await withPluginDown(async () => {
      const down = await runCli(["apiserver", "--data-dir", up.dataDir, "--listen", "127.0.0.1:0", ...WITH_KMS]);
      expect(down.code).not.toBe(0);
      expect(down.stderr.trim().split("\n").at(-1)).toMatch(unwrapFailed(key));
    });
    // Without the flag: told which flag and provider it needs.
    const without = await runCli(["apiserver", "--data-dir", up.dataDir, "--listen", "127.0.0.1:0", "--encryption-provider-config", config]);
    expect(without.code).not.toBe(0);
    expect(without.stderr.trim().split("\n").at(-1)).toBe(flagsNeeded(key));
  }, 120_000);

  it("wraps the key of a data directory made without it on `storage rewrite --ca-key-kms`, keeping the same CA", async () => {
    const first = await startUp({ command: "apiserver", args: ["--encryption-provider-config", config] });
    expect(await first.stop()).toBe(0);
    const key = join(first.dataDir, "pki", "ca.key");
    expect(pkey(key).status).toBe(0);
    const caBefore = readFileSync(join(first.dataDir, "pki", "ca.crt"), "utf8");
    const r = await runCli(["storage", "rewrite", "--data-dir", first.dataDir, ...WITH_KMS]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^rewrote \\d+ objects\\nwrapped ${key.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} with the KMS provider kms1\\n$`));
    expect(pkey(key).status).not.toBe(0);
    expect(statSync(key).mode & 0o777).toBe(0o600);
    const again = await startUp({ command: "apiserver", dataDir: first.dataDir, args: WITH_KMS });
    try {
      expect(readFileSync(join(first.dataDir, "pki", "ca.crt"), "utf8")).toBe(caBefore);
      expect(kubectlWith(again.adminConfig)(["get", "--raw", "/readyz"])).toBe("ok");
    } finally {
      expect(await again.stop()).toBe(0);
    }
  }, 120_000);
});

describe("controller and sign with a wrapped CA key file", () => {
  let server: Awaited<ReturnType<typeof startUp>>;
  let caCert: string;
  let caKey: string;
  beforeAll(async () => {
    // A server run with the flag writes its CA key wrapped; the other commands are given that pair of files.
    server = await startUp({ command: "apiserver", args: WITH_KMS });
    caCert = join(server.dataDir, "pki", "ca.crt");
    caKey = join(server.dataDir, "pki", "ca.key");
    expect(pkey(caKey).status).not.toBe(0);
  }, 60_000);
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
  });

  it("sign issues with it given --encryption-provider-config and --ca-key-kms, and names what it needs otherwise", async () => {
    const csr = join(dir, "alice.csr");
    writeFileSync(csr, (await csrFixture({ cn: "alice" })).pem);
    const sign = (extra: readonly string[]) =>
      runCli(["sign", "--signer-name", "platform.io/apiserver-client", "--usages", "digital signature,client auth", "--csr", csr, "--ca-cert", caCert, "--ca-key", caKey, ...extra]);
    const signed = await sign(WITH_KMS);
    expect(signed.stderr).toBe("");
    expect(signed.code).toBe(0);
    const cert = join(dir, "alice.crt");
    writeFileSync(cert, signed.stdout);
    expect(tryRun("openssl", ["verify", "-CAfile", caCert, cert]).out).toContain(": OK");

    const without = await sign([]);
    expect(without.code).not.toBe(0);
    expect(without.stderr.trim().split("\n")).toEqual([flagsNeeded(caKey)]);
    const configOnly = await sign(["--encryption-provider-config", config]);
    expect(configOnly.code).toBe(2);
    expect(configOnly.stderr).toContain("--encryption-provider-config is read here only to find the provider of --ca-key-kms: give --ca-key-kms too");
    await withPluginDown(async () => {
      const down = await sign(WITH_KMS);
      expect(down.code).not.toBe(0);
      expect(down.stderr.trim().split("\n")).toHaveLength(1);
      expect(down.stderr.trim()).toMatch(unwrapFailed(caKey));
    });
  }, 60_000);

  it("controller signs approved CSRs with it given the same flags, and stops at start without them or the plugin", async () => {
    const args = ["controller", "--platformconfig", server.adminConfig, "--cluster-signing-cert-file", caCert, "--cluster-signing-key-file", caKey, "--bind-address", "127.0.0.1:0"];
    const { proc } = await startProcess(process.execPath, [CLI, ...args, ...WITH_KMS], /controller manager running/, { what: "platform-ca controller" });
    try {
      const kubectl = kubectlWith(server.adminConfig);
      kubectl(["create", "-f", "-"], JSON.stringify(await newCsrObject({ name: "wrapped-2", cn: "system:node:wrapped-2", o: ["system:nodes"] })));
      expect(tryRun("openssl", ["verify", "-CAfile", caCert, await issuedFile(kubectl, "wrapped-2")]).out).toContain(": OK");
    } finally {
      expect(await proc.stop()).toBe(0);
    }
    const without = await runCli(args);
    expect(without.code).not.toBe(0);
    expect(without.stderr.trim().split("\n")).toEqual([flagsNeeded(caKey)]);
    await withPluginDown(async () => {
      const down = await runCli([...args, ...WITH_KMS]);
      expect(down.code).not.toBe(0);
      expect(down.stderr.trim().split("\n")).toHaveLength(1);
      expect(down.stderr.trim()).toMatch(unwrapFailed(caKey));
    });
  }, 90_000);
});
