import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parsePkiManifest, type PkiManifest } from "../../src/config/pki-manifest.js";
import { runDevPki, type DevPkiRow } from "../../src/devpki/dev-pki.js";
import { STATE_FILE } from "../../src/devpki/state.js";
import { tempDir } from "../fixtures/temp-dir.js";

const DAY = 86_400_000;
const T0 = new Date("2031-03-01T12:00:00Z");
const root = tempDir("platform-ca-devpki-");
let dirs = 0;

/** A manifest in its own directory; `certificates` and `extra` are merged into a one-CA document. */
function manifest(certificates: Record<string, unknown>[], extra: Record<string, unknown> = {}): { m: PkiManifest; out: string } {
  const dir = join(root, `m${dirs++}`);
  execFileSync("mkdir", ["-p", dir]);
  const path = join(dir, "pki.yaml");
  writeFileSync(path, stringify({ version: 1, cas: [{ name: "ca", lifetime: "87600h" }], certificates, ...extra }));
  return { m: parsePkiManifest(readFileSync(path, "utf8"), path), out: join(dir, "out") };
}

const at = (t: Date) => () => t;
const summary = (rows: readonly DevPkiRow[]) => rows.map((r) => `${r.name}:${r.action}:${r.reason}`);

/** Python's cryptography X.509 verifier (the one browsers' rules follow): ok or its error. */
function pythonVerifies(caFile: string, certFile: string, host: string, when: Date): string {
  const script = [
    "import sys, datetime",
    "from cryptography import x509",
    "from cryptography.x509.verification import PolicyBuilder, Store",
    "ca = x509.load_pem_x509_certificate(open(sys.argv[1], 'rb').read())",
    "leaf = x509.load_pem_x509_certificate(open(sys.argv[2], 'rb').read())",
    "when = datetime.datetime.fromtimestamp(int(sys.argv[4]), datetime.timezone.utc)",
    "v = PolicyBuilder().store(Store([ca])).time(when).build_server_verifier(x509.DNSName(sys.argv[3]))",
    "try:\n  v.verify(leaf, [])\n  print('ok')\nexcept Exception as e:\n  print(e)",
  ].join("\n");
  return execFileSync("python3", ["-c", script, caFile, certFile, host, String(Math.floor(when.getTime() / 1000))]).toString().trim();
}

describe("runDevPki", () => {
  const web = { name: "web", kind: "server", dns: ["web.dev.test"], lifetime: "8760h" };

  it.each<[string, number, string]>([
    ["a leaf well before its end", 200, "web:kept:up to date"],
    ["a leaf within thirty days of its end", 340, "web:renewed:expires 2032-02-29"],
    ["an expired leaf", 400, "web:renewed:expired"],
  ])("checks %s against the injected clock", async (_, days, expected) => {
    const { m, out } = manifest([web]);
    await runDevPki({ manifest: m, outDir: out, now: at(T0) });
    const rows = await runDevPki({ manifest: m, outDir: out, now: at(new Date(T0.getTime() + days * DAY)) });
    expect(summary(rows)).toEqual(["ca:kept:up to date", expected]);
  });

  it("issues certificates Python's cryptography verifier accepts for their DNS name at the injected time", async () => {
    const { m, out } = manifest([web]);
    await runDevPki({ manifest: m, outDir: out, now: at(T0) });
    const when = new Date(T0.getTime() + DAY);
    expect(pythonVerifies(join(out, "ca.crt"), join(out, "web.crt"), "web.dev.test", when)).toBe("ok");
    expect(pythonVerifies(join(out, "ca.crt"), join(out, "web.crt"), "other.dev.test", when)).not.toBe("ok");
  });

  it.each(["p384", "p521", "rsa2048", "ed25519"])("issues a %s leaf that openssl verifies and that matches its key", async (keyType) => {
    const { m, out } = manifest([{ ...web, keyType }]);
    const rows = await runDevPki({ manifest: m, outDir: out, now: at(new Date()) });
    expect(rows[1]!.action).toBe("issued");
    expect(execFileSync("openssl", ["verify", "-CAfile", join(out, "ca.crt"), join(out, "web.crt")]).toString()).toMatch(/: OK/);
    const fromKey = execFileSync("openssl", ["pkey", "-in", join(out, "web.key"), "-pubout"]).toString();
    const fromCert = execFileSync("openssl", ["x509", "-in", join(out, "web.crt"), "-noout", "-pubkey"]).toString();
    expect(fromKey).toBe(fromCert);
  });

  it("issues through a custom signer's policy, whose maximum lifetime wins over the entry's", async () => {
    const { m, out } = manifest([{ name: "svc", kind: "server", dns: ["api.svc.dev.test"], lifetime: "720h", signer: "dev.test/services" }], {
      signers: [{ name: "dev.test/services", ca: "ca", policy: "services.yaml" }],
    });
    writeFileSync(join(m.source, "../services.yaml"), [
      "signerName: dev.test/services",
      'subjectAltNames: { dns: { permitted: ["*.svc.dev.test"] } }',
      "usages: { required: [server auth] }",
      "lifetime: { maximum: 48h }",
    ].join("\n"));
    const rows = await runDevPki({ manifest: m, outDir: out, now: at(T0) });
    expect(rows[1]!.notAfter.getTime() - T0.getTime()).toBe(48 * 3600 * 1000 - 5 * 60 * 1000);
  });

  it("does not rewrite the state file when nothing changed", async () => {
    const { m, out } = manifest([web]);
    await runDevPki({ manifest: m, outDir: out, now: at(T0) });
    const before = statSync(join(out, STATE_FILE)).mtimeMs;
    const text = readFileSync(join(out, STATE_FILE), "utf8");
    await runDevPki({ manifest: m, outDir: out, now: at(new Date(T0.getTime() + DAY)) });
    expect([statSync(join(out, STATE_FILE)).mtimeMs, readFileSync(join(out, STATE_FILE), "utf8")]).toEqual([before, text]);
  });

  it("reports progress once per issued certificate", async () => {
    const { m, out } = manifest(Array.from({ length: 3 }, (_, i) => ({ ...web, name: `w${i}` })));
    const seen: string[] = [];
    await runDevPki({ manifest: m, outDir: out, now: at(T0), onProgress: (d, t) => seen.push(`${d}/${t}`) });
    expect(seen).toEqual(["1/3", "2/3", "3/3"]);
  });

  it("stops on a CA certificate that does not parse instead of replacing the CA", async () => {
    const { m, out } = manifest([web]);
    await runDevPki({ manifest: m, outDir: out, now: at(T0) });
    writeFileSync(join(out, "ca.crt"), "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n");
    await expect(runDevPki({ manifest: m, outDir: out, now: at(T0) })).rejects.toMatchObject({ code: "CA_INVALID" });
  });

  it("stops on a CA key that does not match instead of replacing the CA", async () => {
    const { m, out } = manifest([web]);
    await runDevPki({ manifest: m, outDir: out, now: at(T0) });
    writeFileSync(join(out, "ca.key"), readFileSync(join(out, "web.key")));
    rmSync(join(out, "web.crt"));
    await expect(runDevPki({ manifest: m, outDir: out, now: at(T0) })).rejects.toMatchObject({ code: "CA_INVALID", message: expect.stringMatching(/delete .*ca\.crt and .*ca\.key/) });
  });
});
