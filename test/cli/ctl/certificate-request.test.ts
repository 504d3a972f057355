// `certificate request --key-out`: an existing key file is never lost. Refused without --force; with it, or for a new
// file, --key-out is written only once the CSR was created. Real processes against `platform-ca up`, keys checked by openssl.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { oneClearError, useUpServer } from "./fixtures.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { runTool } from "../../fixtures/process.js";

const server = useUpServer();

/** The public key (PEM) of a private key file, and of the request held by the CSR object `name`. */
async function publicKeyOfFile(path: string): Promise<string> {
  return (await runTool("openssl", ["pkey", "-pubout", "-in", path])).stdout;
}
async function publicKeyOfCsr(name: string): Promise<string> {
  const request = (await server.up.ctl(["get", "csr", name, "-o", "jsonpath={.spec.request}"])).stdout;
  return (await runTool("openssl", ["req", "-pubkey", "-noout"], { stdin: Buffer.from(request, "base64").toString() })).stdout;
}

const request = (name: string, keyOut: string, ...more: string[]) => server.up.ctl(["certificate", "request", name, "--cn", name, "--key-out", keyOut, ...more]);

describe("certificate request --key-out", () => {
  it("refuses an existing file in one line, before anything is made or sent, and leaves it alone", async () => {
    const dir = tempDir();
    const keyOut = join(dir, "alice.key");
    expect((await request("alice", keyOut)).code).toBe(0);
    const key = readFileSync(keyOut, "utf8");
    // The same command again (or for another CSR): the key of the existing CSR survives.
    for (const name of ["alice", "alice-2"]) {
      const r = await request(name, keyOut);
      expect(r.code).toBe(1);
      expect(oneClearError(r)).toBe(`error: key file ${keyOut} already exists; remove it or pass --force to overwrite it`);
      expect(r.stdout).toBe("");
    }
    expect(readFileSync(keyOut, "utf8")).toBe(key);
    expect(readdirSync(dir)).toEqual(["alice.key"]);
    expect(await publicKeyOfFile(keyOut)).toBe(await publicKeyOfCsr("alice"));
    expect((await server.up.ctl(["get", "csr", "alice-2"])).code).toBe(1);
  });

  it("with --force, replaces the file only once the CSR was created", async () => {
    const dir = tempDir();
    const keyOut = join(dir, "bob.key");
    writeFileSync(keyOut, "old content\n");
    // The create fails (the name is taken): the file keeps what it had, and no new key lies around.
    expect((await request("bob", join(tempDir(), "first.key"))).code).toBe(0);
    const refused = await request("bob", keyOut, "--force");
    expect(refused.code).toBe(1);
    expect(oneClearError(refused)).toMatch(/certificatesigningrequests.* "bob" already exists/);
    expect(readFileSync(keyOut, "utf8")).toBe("old content\n");
    expect(readdirSync(dir)).toEqual(["bob.key"]);
    // The create succeeds: the file holds the new key, private, matching the CSR.
    const r = await request("bob-2", keyOut, "--force");
    expect([r.code, r.stdout, r.stderr]).toEqual([0, "certificatesigningrequest.certificates.platform.io/bob-2 created\n", ""]);
    expect(statSync(keyOut).mode & 0o777).toBe(0o600);
    expect(await publicKeyOfFile(keyOut)).toBe(await publicKeyOfCsr("bob-2"));
    expect(readdirSync(dir)).toEqual(["bob.key"]);
  });

  it("does not create the file when the CSR cannot be created", async () => {
    const dir = tempDir();
    const keyOut = join(dir, "carol.key");
    const r = await request("carol", keyOut, "--signer", "no-such-signer");
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toMatch(/"carol" is invalid: spec.signerName/);
    expect(existsSync(keyOut)).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("keeps the new key, and says where, when the create got no answer", async () => {
    const dir = tempDir();
    const keyOut = join(dir, "erin.key");
    const r = await request("erin", keyOut, "--request-timeout", "1ms");
    expect(r.code).toBe(1);
    const staged = readdirSync(dir);
    expect(staged).toEqual([expect.stringMatching(/^\.erin\.key\.[0-9a-f]+\.tmp$/)]);
    expect(oneClearError(r)).toBe(
      `error: POST /apis/certificates.platform.io/v1/certificatesigningrequests did not complete within 1 ms (request timeout); ` +
        `the request may have been created all the same, so its key was kept in ${join(dir, staged[0]!)} (check with platformctl get csr erin)`,
    );
    expect(statSync(join(dir, staged[0]!)).mode & 0o777).toBe(0o600);
    expect(await publicKeyOfFile(join(dir, staged[0]!))).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  });

  it("does not keep the new key when the server cannot be reached at all", async () => {
    const dir = tempDir();
    const r = await request("frank", join(dir, "frank.key"), "--server", "https://127.0.0.1:1");
    expect(oneClearError(r)).toMatch(/connection refused/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("names the file it cannot write, and creates no CSR", async () => {
    const keyOut = join(tempDir(), "missing-dir", "dave.key");
    const r = await request("dave", keyOut);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toBe(`error: cannot write private key file ${keyOut}: ENOENT`);
    expect((await server.up.ctl(["get", "csr", "dave"])).code).toBe(1);
  });
});
