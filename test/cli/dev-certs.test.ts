import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { REPO, mode, opensslVerifies, runCli, tool, x509Text } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";

const COMMITTED = join(REPO, "certs-dev/pki.yaml");
const LEAVES = ["apiserver", "admin", "controller-manager", "node-1-client", "node-1-serving"];

interface Row {
  readonly name: string;
  readonly kind: string;
  readonly action: string;
  readonly notAfter: string;
  readonly files: string;
  readonly reason: string;
}

/** Parses the printed table (columns split on runs of 2+ spaces). */
function rows(stdout: string): Row[] {
  const [header, ...lines] = stdout.trimEnd().split("\n");
  expect(header).toMatch(/^NAME\s+KIND\s+ACTION\s+NOT AFTER\s+FILES\s+REASON$/);
  return lines.map((l) => {
    const [name, kind, action, notAfter, files, ...reason] = l.split(/\s{2,}/);
    return { name: name!, kind: kind!, action: action!, notAfter: notAfter!, files: files!, reason: reason.join("  ") };
  });
}

const actions = (stdout: string): Record<string, string> => Object.fromEntries(rows(stdout).map((r) => [r.name, r.action]));

/** Bytes and mtime of every file in `dir`, to prove a run rewrote nothing. */
function snapshot(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, `${statSync(join(dir, f)).mtimeMs}:${readFileSync(join(dir, f), "hex")}`]));
}

/** A copy of the committed manifest in its own directory, edited by `edit`; returns the manifest path. */
function manifestCopy(root: string, name: string, edit: (m: { certificates: Record<string, unknown>[] } & Record<string, unknown>) => void = () => {}): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const m = parse(readFileSync(COMMITTED, "utf8"));
  edit(m);
  writeFileSync(join(dir, "pki.yaml"), stringify(m));
  return join(dir, "pki.yaml");
}

describe("platform-ca dev-certs", () => {
  const root = tempDir("platform-ca-dev-certs-");

  describe("on a fresh clone, with no flags", () => {
    let first: Awaited<ReturnType<typeof runCli>>;
    const out = join(root, "clone/certs-dev/out");
    beforeAll(async () => {
      mkdirSync(join(root, "clone/certs-dev"), { recursive: true });
      copyFileSync(COMMITTED, join(root, "clone/certs-dev/pki.yaml"));
      first = await runCli(["dev-certs"], { cwd: join(root, "clone") });
    });

    it("mints the committed dev PKI into certs-dev/out and prints the table", () => {
      expect([first.code, first.stderr]).toEqual([0, ""]);
      expect(rows(first.stdout).map((r) => [r.name, r.kind, r.action])).toEqual([
        ["ca", "ca", "issued"],
        ["apiserver", "server", "issued"],
        ["admin", "client", "issued"],
        ["controller-manager", "client", "issued"],
        ["node-1-client", "client", "issued"],
        ["node-1-serving", "server", "issued"],
      ]);
      expect(rows(first.stdout)[1]!.files).toBe("certs-dev/out/apiserver.crt,certs-dev/out/apiserver.key");
    });

    it("writes keys 0600, certificates 0644 and the directory 0700", () => {
      expect(mode(out)).toBe(0o700);
      for (const name of ["ca", ...LEAVES]) {
        expect([name, mode(join(out, `${name}.key`))]).toEqual([name, 0o600]);
        expect([name, mode(join(out, `${name}.crt`))]).toEqual([name, 0o644]);
      }
    });

    it.each(LEAVES)("issues %s so that openssl verifies it against ca.crt", async (name) => {
      expect(await opensslVerifies(join(out, "ca.crt"), join(out, `${name}.crt`))).toBe(true);
      const pub = await tool("openssl", ["pkey", "-in", join(out, `${name}.key`), "-pubout"]);
      const certPub = await tool("openssl", ["x509", "-in", join(out, `${name}.crt`), "-noout", "-pubkey"]);
      expect(pub.out).toBe(certPub.out);
    });

    it.each<[string, "sslserver" | "sslclient", RegExp]>([
      ["apiserver", "sslserver", /DNS:localhost, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1/],
      ["admin", "sslclient", /O\s?=\s?system:masters, CN\s?=\s?platform-admin/],
      ["node-1-client", "sslclient", /O\s?=\s?system:nodes, CN\s?=\s?system:node:node-1/],
      ["node-1-serving", "sslserver", /DNS:node-1, DNS:localhost, IP Address:127\.0\.0\.1/],
    ])("gives %s the purpose and names of its manifest entry", async (name, purpose, text) => {
      expect(await opensslVerifies(join(out, "ca.crt"), join(out, `${name}.crt`), purpose)).toBe(true);
      expect(await x509Text(join(out, `${name}.crt`))).toMatch(text);
    });

    it("keeps everything on a second run and rewrites no file", async () => {
      const before = snapshot(out);
      const again = await runCli(["dev-certs"], { cwd: join(root, "clone") });
      expect(again.code).toBe(0);
      expect(Object.values(actions(again.stdout))).toEqual(["kept", "kept", "kept", "kept", "kept", "kept"]);
      expect(snapshot(out)).toEqual(before);
    });
  });

  it("re-issues only the entry whose manifest changed", async () => {
    const out = join(root, "edit-out");
    const manifest = manifestCopy(root, "edit");
    expect((await runCli(["dev-certs", "--manifest", manifest, "--out", out])).code).toBe(0);
    const before = snapshot(out);
    manifestCopy(root, "edit", (m) => (m.certificates[0]!.dns = ["localhost", "api.dev.test"]));
    const r = await runCli(["dev-certs", "--manifest", manifest, "--out", out]);
    expect(actions(r.stdout)).toEqual({ ca: "kept", apiserver: "renewed", admin: "kept", "controller-manager": "kept", "node-1-client": "kept", "node-1-serving": "kept" });
    expect(rows(r.stdout)[1]!.reason).toBe("manifest changed");
    const after = snapshot(out);
    const changed = Object.keys(after).filter((f) => after[f] !== before[f]).sort();
    expect(changed).toEqual([".state.json", "apiserver.crt", "apiserver.key"]);
    expect(await x509Text(join(out, "apiserver.crt"))).toMatch(/DNS:api\.dev\.test/);
  });

  it.each<[string, string[], Record<string, string>]>([
    ["--renew-within longer than the leaves' lifetime renews every leaf and keeps the CA", ["--renew-within", "9000h"], { ca: "kept", apiserver: "renewed" }],
    ["--force re-issues every leaf and keeps the CA", ["--force"], { ca: "kept", apiserver: "renewed" }],
  ])("%s", async (_, flags, expected) => {
    const out = join(root, `flags-${flags[0]}`);
    expect((await runCli(["dev-certs", "--out", out])).code).toBe(0);
    const caBefore = readFileSync(join(out, "ca.crt"), "utf8");
    const r = await runCli(["dev-certs", "--out", out, ...flags]);
    expect(r.code).toBe(0);
    const got = actions(r.stdout);
    expect({ ca: got.ca, apiserver: got.apiserver }).toEqual(expected);
    expect(LEAVES.map((l) => got[l])).toEqual(LEAVES.map(() => "renewed"));
    expect(readFileSync(join(out, "ca.crt"), "utf8")).toBe(caBefore);
    expect(await opensslVerifies(join(out, "ca.crt"), join(out, "apiserver.crt"))).toBe(true);
  });

  it("creates a new CA when its files are removed, and re-issues every leaf under it", async () => {
    const out = join(root, "new-ca");
    expect((await runCli(["dev-certs", "--out", out])).code).toBe(0);
    const { rmSync } = await import("node:fs");
    rmSync(join(out, "ca.crt"));
    const r = await runCli(["dev-certs", "--out", out]);
    expect(rows(r.stdout).map((x) => `${x.name}:${x.action}:${x.reason}`)).toEqual([
      "ca:issued:missing files",
      ...LEAVES.map((l) => `${l}:renewed:CA changed`),
    ]);
    expect(await opensslVerifies(join(out, "ca.crt"), join(out, "admin.crt"))).toBe(true);
  });

  it("prints a progress counter on stderr when it issues more than ten certificates", async () => {
    const manifest = manifestCopy(root, "many", (m) => {
      m.signers = [];
      m.certificates = Array.from({ length: 12 }, (_, i) => ({ name: `svc-${i}`, kind: "server", dns: [`svc-${i}.dev.test`] }));
    });
    const r = await runCli(["dev-certs", "--manifest", manifest]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("issuing certificates: 10/12\nissuing certificates: 12/12\n");
    expect(existsSync(join(root, "many/out/svc-11.crt"))).toBe(true);
  });

  it.each<[string, (m: Record<string, unknown> & { certificates: Record<string, unknown>[] }) => void, RegExp]>([
    ["an IP that is not one", (m) => (m.certificates[0]!.ip = ["256.0.0.1"]), /expected `certificates\[0\]\.ip\[0\]` an IPv4 or IPv6 address, got "256\.0\.0\.1"/],
    ["an unknown key type", (m) => (m.certificates[2]!.keyType = "dsa"), /expected `certificates\[2\]\.keyType` one of/],
  ])("refuses a manifest with %s, naming the field (exit 1)", async (_, edit, message) => {
    const manifest = manifestCopy(root, `bad-${Math.random().toString(36).slice(2)}`, edit);
    const r = await runCli(["dev-certs", "--manifest", manifest]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: invalid dev PKI manifest /);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe("");
  });

  it("refuses a signer-issued entry its signer does not permit, naming the certificate (exit 1)", async () => {
    const manifest = manifestCopy(root, "refused", (m) => (m.certificates[1]!.signer = "apiserver-client"));
    const r = await runCli(["dev-certs", "--manifest", manifest]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: certificate admin \(signer platform\.io\/apiserver-client\): .*system:masters/);
  });

  it.each<[string, string[], number, RegExp]>([
    ["a manifest that does not exist", ["--manifest", "/nonexistent/pki.yaml"], 1, /cannot read dev PKI manifest \/nonexistent\/pki\.yaml: ENOENT/],
    ["a --renew-within that is not a duration", ["--renew-within", "soon"], 2, /--renew-within/],
  ])("fails on %s", async (_, flags, code, message) => {
    const r = await runCli(["dev-certs", ...flags]);
    expect(r.code).toBe(code);
    expect(r.stderr).toMatch(message);
  });
});
