// Revocation end to end with real processes: `platform-ca up`, platformctl revoke, the API server refusing the
// revoked client certificate within 2 s with the reason, other users unaffected, a restart keeping it; and a
// certificate issued offline with the cluster CA (`platform-ca sign`), revoked by serial.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CTL, PLATFORM_CA, oneClearError, runNode, type Run } from "../cli/ctl/fixtures.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { opsGet } from "../controller/controllers/cluster.js";
import { startUp, type UpProcess } from "./up-process.js";

const work = tempDir("revocation-e2e-");
let up: UpProcess;
afterAll(async () => {
  await up?.stop();
});

const ctl = (args: readonly string[]): Promise<Run> => runNode(CTL, ["--platformconfig", up.adminConfig, ...args], { env: { HOME: work } });

interface Cert {
  readonly cert: string;
  readonly key: string;
}

/** Requests, approves and waits for a client certificate for `cn`, as an administrator would hand one out. */
async function clientCert(cn: string): Promise<Cert> {
  const keyFile = join(work, `${cn}.key`);
  expect((await ctl(["certificate", "request", cn, "--cn", cn, "--key-out", keyFile])).code).toBe(0);
  expect((await ctl(["certificate", "approve", cn])).code).toBe(0);
  for (let i = 0; i < 100; i++) {
    const r = await ctl(["get", "csr", cn, "-o", "jsonpath={.status.certificate}"]);
    if (r.stdout.trim() !== "") return { cert: Buffer.from(r.stdout.trim(), "base64").toString(), key: readFileSync(keyFile, "utf8") };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no certificate was issued to ${cn}`);
}

/** A client certificate for `cn` issued offline by `platform-ca sign` with the server's own CA key, no CSR object. */
async function offlineCert(cn: string): Promise<Cert> {
  const key = join(work, `${cn}-offline.key`);
  const csr = join(work, `${cn}-offline.csr`);
  const gen = spawnSync("openssl", ["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-subj", `/CN=${cn}`, "-out", csr], { encoding: "utf8" });
  expect(gen.status, gen.stderr).toBe(0);
  const pki = join(up.dataDir, "pki");
  const signed = await runNode(PLATFORM_CA, ["sign", "--ca-cert", join(pki, "ca.crt"), "--ca-key", join(pki, "ca.key"), "--signer-name", "platform.io/apiserver-client", "--usages", "digital signature,client auth", "--csr", csr]);
  expect([signed.code, signed.stderr]).toEqual([0, ""]);
  return { cert: signed.stdout, key: readFileSync(key, "utf8") };
}

/** The latest CRL of the API-server client signer, from the controllers' ops endpoint, as `openssl crl -text` prints it. */
async function crlText(): Promise<string> {
  const ops = /controllers {2}health and metrics on (https:\/\/127\.0\.0\.1:\d+)/.exec(up.stdout())?.[1];
  expect(ops).toBeDefined();
  writeFileSync(join(work, "crl.pem"), (await opsGet(undefined, `${ops}/crl/platform.io/apiserver-client?format=pem`)).text);
  const r = spawnSync("openssl", ["crl", "-in", join(work, "crl.pem"), "-noout", "-text", "-verify", "-CAfile", join(up.dataDir, "pki", "ca.crt")], { encoding: "utf8" });
  return r.stderr.includes("verify OK") ? r.stdout : "";
}

/** One request with a client certificate; the server's certificate is checked against the data directory's CA. */
function call(who: Cert, method = "GET", path = "/version", body?: unknown): Promise<{ status: number; body: any }> {
  const url = new URL(path, up.address);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      { method, cert: who.cert, key: who.key, ca: readFileSync(join(up.dataDir, "pki", "ca.crt")), agent: false, headers: payload ? { "content-type": "application/json" } : {} },
      (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode!, body: text.startsWith("{") ? JSON.parse(text) : text }));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

describe("revocation with real processes", () => {
  it("refuses alice within 2 s of platformctl certificate revoke, with the reason; bob is unaffected; a restart keeps it", async () => {
    up = await startUp();
    const alice = await clientCert("alice");
    const bob = await clientCert("bob");
    expect((await call(alice)).status).toBe(200);
    expect((await call(bob)).status).toBe(200);

    // alice has no revoke permission on the signer: her own revocation of bob is refused with 403.
    const bobCsr = JSON.parse((await ctl(["get", "csr", "bob", "-o", "json"])).stdout);
    bobCsr.status.conditions.push({ type: "Revoked", status: "True", reason: "keyCompromise" });
    const path = "/apis/certificates.platform.io/v1/certificatesigningrequests/bob/revocation";
    expect((await call(alice, "PUT", path, bobCsr)).status).toBe(403);

    const revoked = await ctl(["certificate", "revoke", "alice", "--reason", "keyCompromise", "--message", "laptop stolen"]);
    const started = Date.now();
    expect(revoked).toMatchObject({ code: 0, stdout: "certificatesigningrequest.certificates.platform.io/alice revoked\n" });
    let refused = await call(alice);
    while (refused.status === 200 && Date.now() - started < 5000) refused = await call(alice);
    const elapsed = Date.now() - started;
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe("Unauthorized: x509: certificate has been revoked (keyCompromise; CertificateSigningRequest alice)");
    expect(elapsed).toBeLessThan(2000);
    expect((await call(bob)).status).toBe(200);

    // The CRL, fetched without credentials from the controllers' ops endpoint, lists alice with her reason.
    const ops = /controllers {2}health and metrics on (https:\/\/127\.0\.0\.1:\d+)/.exec(up.stdout())?.[1];
    expect(ops).toBeDefined();
    let crl = { status: 0, text: "" };
    for (let i = 0; i < 100 && !crl.text.includes("BEGIN X509 CRL"); i++) {
      crl = await opsGet(undefined, `${ops}/crl/platform.io/apiserver-client?format=pem`);
      if (!crl.text.includes("BEGIN X509 CRL")) await new Promise((r) => setTimeout(r, 100));
    }
    const aliceSerial = spawnSync("openssl", ["x509", "-noout", "-serial"], { input: alice.cert, encoding: "utf8" }).stdout.trim().replace("serial=", "");
    const caFile = join(up.dataDir, "pki", "ca.crt");
    let listed = "";
    for (let i = 0; i < 100 && !listed.includes(aliceSerial); i++) {
      writeFileSync(join(work, "crl.pem"), (await opsGet(undefined, `${ops}/crl/platform.io/apiserver-client?format=pem`)).text);
      const r = spawnSync("openssl", ["crl", "-in", join(work, "crl.pem"), "-noout", "-text", "-verify", "-CAfile", caFile], { encoding: "utf8" });
      expect(r.stderr).toContain("verify OK");
      listed = r.stdout;
      if (!listed.includes(aliceSerial)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed).toMatch(new RegExp(`Serial Number: ${aliceSerial}[\\s\\S]*?Key Compromise`));
    // The default answer is DER, as CRL distribution points serve it.
    const der = await new Promise<{ type: string; body: Buffer }>((resolve, reject) => {
      https
        .get(`${ops}/crl/platform.io/apiserver-client`, { rejectUnauthorized: false, agent: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => resolve({ type: String(res.headers["content-type"]), body: Buffer.concat(chunks) }));
        })
        .on("error", reject);
    });
    expect(der.type).toBe("application/pkix-crl");
    writeFileSync(join(work, "crl.der"), der.body);
    expect(spawnSync("openssl", ["crl", "-inform", "DER", "-in", join(work, "crl.der"), "-noout", "-verify", "-CAfile", caFile], { encoding: "utf8" }).stderr).toContain("verify OK");
    writeFileSync(join(work, "alice.pem"), alice.cert);
    writeFileSync(join(work, "bob.pem"), bob.cert);
    const crlCheck = (f: string) => spawnSync("openssl", ["verify", "-crl_check", "-CRLfile", join(work, "crl.pem"), "-CAfile", caFile, join(work, f)], { encoding: "utf8" });
    expect(crlCheck("alice.pem").stdout + crlCheck("alice.pem").stderr).toContain("certificate revoked");
    expect(crlCheck("bob.pem").status).toBe(0);

    const described = await ctl(["describe", "csr", "alice"]);
    expect(described.stdout).toMatch(/Approved,Issued,Revoked/);
    expect(described.stdout).toMatch(/Revoked\s+True\s+keyCompromise\s+serial [0-9A-F]+: laptop stolen/);

    // Bad input: one clear error line, non-zero exit, nothing changed.
    const before = (await ctl(["get", "csr", "alice", "-o", "jsonpath={.metadata.resourceVersion}"])).stdout;
    const twice = await ctl(["certificate", "revoke", "alice", "--reason", "superseded"]);
    expect(twice.code).not.toBe(0);
    expect(oneClearError(twice)).toMatch(/^error: .*"alice" is already revoked \(keyCompromise at /);
    const reason = await ctl(["certificate", "revoke", "bob", "--reason", "certificateHold"]);
    expect(reason.code).not.toBe(0);
    expect(oneClearError(reason)).toBe(
      'error: --reason must be one of unspecified, keyCompromise, cACompromise, affiliationChanged, superseded, cessationOfOperation, privilegeWithdrawn, aACompromise, got "certificateHold"',
    );
    const unknown = await ctl(["certificate", "revoke", "nobody", "--reason", "keyCompromise"]);
    expect(unknown.code).not.toBe(0);
    expect(oneClearError(unknown)).toMatch(/^error: .*"nobody" not found/);
    expect((await ctl(["certificate", "request", "pending", "--cn", "pending", "--key-out", join(work, "pending.key")])).code).toBe(0);
    const pending = await ctl(["certificate", "revoke", "pending", "--reason", "keyCompromise"]);
    expect(pending.code).not.toBe(0);
    expect(oneClearError(pending)).toMatch(/only a request with an issued certificate can be revoked/);
    expect((await ctl(["get", "csr", "alice", "-o", "jsonpath={.metadata.resourceVersion}"])).stdout).toBe(before);
    expect((await call(bob)).status).toBe(200);

    expect(await up.stop()).toBe(0);
    up = await startUp({ dataDir: up.dataDir });
    expect((await call(alice)).status).toBe(401);
    expect((await call(bob)).status).toBe(200);
  }, 120_000);

  it("refuses a certificate issued offline within 2 s of platformctl certificate revoke --serial; the CRL lists the serial", async () => {
    await up?.stop();
    up = await startUp();
    const carol = await offlineCert("carol");
    const erin = await offlineCert("erin");
    expect((await call(carol)).status).toBe(200);
    expect((await call(erin)).status).toBe(200);
    const serial = spawnSync("openssl", ["x509", "-noout", "-serial"], { input: carol.cert, encoding: "utf8" }).stdout.trim().replace("serial=", "");
    const name = `platform.io:apiserver-client:${serial.toLowerCase()}`;
    // Upper-case with ':' separators, as openssl -text prints serials: the server stores the one form.
    const colons = serial.match(/../g)!.join(":");
    const revoked = await ctl(["certificate", "revoke", "--serial", colons, "--signer", "platform.io/apiserver-client", "--reason", "keyCompromise", "--message", "key leaked"]);
    const started = Date.now();
    expect(revoked).toMatchObject({ code: 0, stdout: `certificaterevocation.certificates.platform.io/${name} created\n` });
    let refused = await call(carol);
    while (refused.status === 200 && Date.now() - started < 5000) refused = await call(carol);
    expect(refused.status).toBe(401);
    expect(refused.body.message).toBe(`Unauthorized: x509: certificate has been revoked (keyCompromise; CertificateRevocation ${name})`);
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await call(erin)).status).toBe(200);

    let listed = "";
    for (let i = 0; i < 100 && !listed.includes(serial); i++) {
      listed = await crlText();
      if (!listed.includes(serial)) await new Promise((r) => setTimeout(r, 100));
    }
    expect(listed).toMatch(new RegExp(`Serial Number: ${serial}[\\s\\S]*?Key Compromise`));

    const twice = await ctl(["certificate", "revoke", "--serial", serial, "--signer", "platform.io/apiserver-client", "--reason", "superseded"]);
    expect(twice.code).not.toBe(0);
    expect(oneClearError(twice)).toMatch(/^error: .*already exists/);
    const badHex = await ctl(["certificate", "revoke", "--serial", "xyz", "--signer", "platform.io/apiserver-client", "--reason", "superseded"]);
    expect(badHex.code).not.toBe(0);
    expect(oneClearError(badHex)).toBe('error: --serial must be a serial number in hex (e.g. 5F:0C:1A), got "xyz"');
    const described = await ctl(["get", "certificaterevocations"]);
    expect(described.stdout).toMatch(new RegExp(`${name}\\s+platform.io/apiserver-client\\s+${serial.toLowerCase()}\\s+keyCompromise\\s+\\d+s`));
  }, 120_000);
});
