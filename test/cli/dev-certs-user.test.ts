// `dev-certs issue` outside a project: the per-user CA (PLATFORM_CA_ROOT, XDG_DATA_HOME), chosen file names, PKCS#12 read by openssl.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { pkcs12Kdf } from "../../src/devpki/pkcs12.js";
import { mode, opensslVerifies, runCli, tool, x509Text } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { REPO } from "../fixtures/repo.js";

const hasKeytool = (() => {
  try {
    execFileSync("keytool", ["-help"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** A user with an empty home and working directory, far from any project; no CA location set. */
function stranger(root: string, name: string) {
  const home = join(root, name, "home");
  const cwd = join(root, name, "work");
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const env = { HOME: home, XDG_DATA_HOME: "", PLATFORM_CA_ROOT: "" };
  return { home, cwd, env, cli: (args: readonly string[], more: Record<string, string> = {}) => runCli(args, { cwd, env: { ...env, ...more } }) };
}

describe("dev-certs issue outside a project", () => {
  const root = tempDir("platform-ca-user-");

  it("issues from an empty directory with the per-user CA in ~/.local/share/platform-ca, files in the working directory", async () => {
    const u = stranger(root, "plain");
    const r = await u.cli(["dev-certs", "issue", "app.test", "127.0.0.1"]);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    const caDir = join(u.home, ".local/share/platform-ca");
    expect(r.stdout.split("\n")[0]).toMatch(/^NAME\s+KIND\s+ACTION\s+NOT AFTER\s+FILES\s+NAMES$/);
    expect(r.stdout).not.toContain("REASON");
    expect(r.stdout).toMatch(/^ca\s+ca\s+issued\s.*\sCN=platform-ca development CA \S+@\S+$/m);
    expect(r.stdout).toMatch(/^app\.test\+1\s+server\s+issued\s+\S+\s+app\.test\+1\.pem,app\.test\+1-key\.pem\s+app\.test 127\.0\.0\.1$/m);
    expect(readdirSync(u.cwd).sort()).toEqual(["app.test+1-key.pem", "app.test+1.pem"]);
    expect([mode(join(caDir, "ca.key")), mode(join(u.cwd, "app.test+1-key.pem"))]).toEqual([0o600, 0o600]);
    expect(await opensslVerifies(join(caDir, "ca.crt"), join(u.cwd, "app.test+1.pem"), "sslserver")).toBe(true);
    // The same user elsewhere gets the same CA.
    const again = await runCli(["dev-certs", "issue", "other.test"], { cwd: u.home, env: u.env });
    expect(again.stdout).toMatch(/^ca\s+ca\s+kept\s/m);
    expect((await u.cli(["dev-certs", "ca-root"])).stdout).toBe(`${caDir}\n`);
  });

  it("keeps the CA in $PLATFORM_CA_ROOT, or $XDG_DATA_HOME/platform-ca, when set", async () => {
    const u = stranger(root, "env");
    const ca = join(root, "env", "my-ca");
    expect((await u.cli(["dev-certs", "issue", "a.test"], { PLATFORM_CA_ROOT: ca })).code).toBe(0);
    expect(existsSync(join(ca, "ca.crt"))).toBe(true);
    const data = join(root, "env", "data");
    expect((await u.cli(["dev-certs", "issue", "b.test"], { XDG_DATA_HOME: data })).code).toBe(0);
    expect(existsSync(join(data, "platform-ca", "ca.crt"))).toBe(true);
    expect(existsSync(join(u.home, ".local"))).toBe(false);
  });

  it("writes --cert-file and --key-file where asked (key 0600)", async () => {
    const u = stranger(root, "files");
    const r = await u.cli(["dev-certs", "issue", "localhost", "--cert-file", "tls/server.crt", "--key-file", "secret/server.key"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/tls\/server\.crt,secret\/server\.key\s+localhost$/m);
    expect(mode(join(u.cwd, "secret/server.key"))).toBe(0o600);
    const pub = (args: string[]) => execFileSync("openssl", args, { encoding: "utf8" });
    expect(pub(["pkey", "-in", join(u.cwd, "secret/server.key"), "-pubout"])).toBe(pub(["x509", "-in", join(u.cwd, "tls/server.crt"), "-noout", "-pubkey"]));
  });

  it("writes one PKCS#12 file in-process that openssl pkcs12 opens with the password, and refuses without it", async () => {
    const u = stranger(root, "p12");
    const r = await u.cli(["dev-certs", "issue", "--client", "alice@example.test", "--pkcs12"]);
    expect(r.code).toBe(0);
    const file = join(u.cwd, "alice@example.test-client.p12");
    expect(readdirSync(u.cwd)).toEqual(["alice@example.test-client.p12"]);
    expect(mode(file)).toBe(0o600);
    const opened = await tool("openssl", ["pkcs12", "-in", file, "-passin", "pass:changeit", "-nodes", "-info"]);
    expect(opened.code).toBe(0);
    expect(opened.out).toContain("MAC: sha256");
    expect(opened.out).toMatch(/Shrouded Keybag: PBES2, PBKDF2, AES-256-CBC/);
    expect(opened.out).toContain("friendlyName: alice@example.test-client");
    expect(opened.out.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(opened.out).toContain("BEGIN PRIVATE KEY");
    const certs = join(u.cwd, "..", "from-p12.pem");
    execFileSync("openssl", ["pkcs12", "-in", file, "-passin", "pass:changeit", "-nokeys", "-clcerts", "-out", certs]);
    expect(await x509Text(certs)).toMatch(/TLS Web Client Authentication/);
    expect(await opensslVerifies(join(u.home, ".local/share/platform-ca/ca.crt"), certs, "sslclient")).toBe(true);
    expect((await tool("openssl", ["pkcs12", "-in", file, "-passin", "pass:wrong", "-nodes"])).out).toMatch(/mac verify (error|failure)/i);
    // GnuTLS reads it too.
    expect((await tool("certtool", ["--p12-info", "--inder", "--infile", file, "--password", "changeit"])).out).toMatch(/MAC: SHA256[\s\S]*Friendly name: alice@example\.test-client/);

    const custom = await u.cli(["dev-certs", "issue", "b.test", "--pkcs12", "b.pfx", "--pkcs12-password", "s3cret"]);
    expect(custom.code).toBe(0);
    expect((await tool("openssl", ["pkcs12", "-in", join(u.cwd, "b.pfx"), "-passin", "pass:s3cret", "-nodes"])).code).toBe(0);
  });

  it.skipIf(!hasKeytool)("writes a PKCS#12 file Java's keytool lists as a key entry", async () => {
    const u = stranger(root, "java");
    expect((await u.cli(["dev-certs", "issue", "java.test", "--pkcs12"])).code).toBe(0);
    const listed = await tool("keytool", ["-list", "-keystore", join(u.cwd, "java.test.p12"), "-storetype", "PKCS12", "-storepass", "changeit"]);
    expect(listed.out).toMatch(/^java\.test, .*PrivateKeyEntry/m);
  });

  it("derives the MAC key as OpenSSL's PKCS12KDF does", () => {
    const salt = Buffer.from("0102030405060708", "hex");
    const pass = Buffer.concat([Buffer.from("changeit", "utf16le").swap16(), Buffer.alloc(2)]).toString("hex");
    const want = execFileSync("openssl", ["kdf", "-keylen", "32", "-kdfopt", "digest:SHA256", "-kdfopt", `hexpass:${pass}`, "-kdfopt", "hexsalt:0102030405060708", "-kdfopt", "iter:2048", "-kdfopt", "id:3", "PKCS12KDF"], { encoding: "utf8" });
    expect(pkcs12Kdf("changeit", salt, 3, 2048, 32).toString("hex")).toBe(want.trim().replaceAll(":", "").toLowerCase());
  });

  it("says how to go on when there is no manifest here, and refuses contradictory file flags", async () => {
    const u = stranger(root, "none");
    const r = await u.cli(["dev-certs"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `error: no dev PKI manifest here (certs-dev/pki.yaml): pass --manifest FILE, run it in a project that has one, or issue single certificates with your own dev CA (${join(u.home, ".local/share/platform-ca")}): platform-ca dev-certs issue NAME…\n`,
    );
    const both = await u.cli(["dev-certs", "issue", "x.test", "--pkcs12", "--cert-file", "x.crt"]);
    expect([both.code, both.stderr]).toEqual([2, "error: --pkcs12 writes one file instead of --cert-file and --key-file\n"]);
    expect(readdirSync(u.cwd)).toEqual([]);
  });

  it("still uses the project's CA (certs-dev/out) inside a project", async () => {
    const project = join(root, "project");
    mkdirSync(join(project, "certs-dev"), { recursive: true });
    execFileSync("cp", [join(REPO, "certs-dev/pki.yaml"), join(project, "certs-dev/pki.yaml")]);
    const env = { HOME: join(root, "project-home"), XDG_DATA_HOME: "", PLATFORM_CA_ROOT: "" };
    expect((await runCli(["dev-certs"], { cwd: project, env })).code).toBe(0);
    const r = await runCli(["dev-certs", "issue", "p.test"], { cwd: project, env });
    expect(r.stdout).toMatch(/^ca\s+ca\s+kept\s+\S+\s+certs-dev\/out\/ca\.crt,certs-dev\/out\/ca\.key\s+CN=platform-ca development cluster CA$/m);
    expect(await opensslVerifies(join(project, "certs-dev/out/ca.crt"), join(project, "certs-dev/out/p.test.pem"))).toBe(true);
    expect(readFileSync(join(project, "certs-dev/out/ca.crt"), "utf8")).toContain("BEGIN CERTIFICATE");
  });
});
