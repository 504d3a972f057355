import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mode, opensslVerifies, runCli, tool, x509Text } from "./fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";

describe("platform-ca dev-certs issue", () => {
  const root = tempDir("platform-ca-issue-");
  const caDir = join(root, "ca");
  const out = join(root, "certs");
  const issue = (...args: string[]) => runCli(["dev-certs", "issue", ...args, "--out", out, "--ca-dir", caDir]);

  it("issues a server certificate for DNS names, IPs, emails and URIs, creating the dev CA", async () => {
    const r = await issue("example.test", "*.example.test", "127.0.0.1", "::1", "dev@example.test", "spiffe://dev.test/web");
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(r.stdout).toMatch(/^ca\s+ca\s+issued\s/m);
    expect(r.stdout).toMatch(/^example\.test\+5\s+server\s+issued\s/m);
    const cert = join(out, "example.test+5.pem");
    expect(mode(join(out, "example.test+5-key.pem"))).toBe(0o600);
    expect(mode(join(caDir, "ca.key"))).toBe(0o600);
    expect(await opensslVerifies(join(caDir, "ca.crt"), cert, "sslserver")).toBe(true);
    const text = await x509Text(cert);
    expect(text).toMatch(/Subject: CN\s?=\s?example\.test\n/);
    expect(text).toMatch(
      /DNS:example\.test, DNS:\*\.example\.test, IP Address:127\.0\.0\.1, IP Address:0:0:0:0:0:0:0:1, email:dev@example\.test, URI:spiffe:\/\/dev\.test\/web/,
    );
    expect(text).toMatch(/TLS Web Server Authentication/);
    expect(text).toMatch(/ASN1 OID: prime256v1/);
  });

  it("reuses the dev CA on the next call", async () => {
    const before = readFileSync(join(caDir, "ca.crt"), "utf8");
    const r = await issue("second.test");
    expect(r.stdout).toMatch(/^ca\s+ca\s+kept\s/m);
    expect(readFileSync(join(caDir, "ca.crt"), "utf8")).toBe(before);
    expect(await opensslVerifies(join(caDir, "ca.crt"), join(out, "second.test.pem"))).toBe(true);
  });

  it("issues a client certificate with --client, named like mkcert's", async () => {
    const r = await issue("--client", "alice@example.test");
    expect(r.code).toBe(0);
    const cert = join(out, "alice@example.test-client.pem");
    expect(await opensslVerifies(join(caDir, "ca.crt"), cert, "sslclient")).toBe(true);
    expect(await x509Text(cert)).toMatch(/TLS Web Client Authentication/);
    expect(await x509Text(cert)).not.toMatch(/TLS Web Server Authentication/);
  });

  it("uses an RSA 2048 key with --rsa", async () => {
    expect((await issue("--rsa", "rsa.test")).code).toBe(0);
    const key = await tool("openssl", ["pkey", "-in", join(out, "rsa.test-key.pem"), "-noout", "-text"]);
    expect(key.out).toMatch(/Private-Key: \(2048 bit/);
  });

  it.each<[string, string[], RegExp]>([
    ["--rsa with --ecdsa", ["--rsa", "--ecdsa", "x.test"], /exclude each other/],
    ["a name that is no DNS name, IP, email or URI", ["a b"], /"a b" is not a valid DNS name, IP address, email or URI/],
    ["no name at all", [], /missing required argument/],
  ])("treats %s as a usage error (exit 2)", async (_, args, message) => {
    const r = await issue(...args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });

  it("shares its CA with the manifest's CA of the same directory", async () => {
    const dir = join(root, "shared");
    expect((await runCli(["dev-certs", "issue", "first.test", "--out", dir, "--ca-dir", dir])).code).toBe(0);
    const ca = readFileSync(join(dir, "ca.crt"), "utf8");
    const r = await runCli(["dev-certs", "--out", dir]);
    expect(r.stdout).toMatch(/^ca\s+ca\s+kept\s/m);
    expect(readFileSync(join(dir, "ca.crt"), "utf8")).toBe(ca);
    expect(await opensslVerifies(join(dir, "ca.crt"), join(dir, "apiserver.crt"))).toBe(true);
  });
});
