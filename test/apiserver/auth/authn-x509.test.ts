// Client-certificate authentication: chains, validity, EKU, subjects, openssl-made certificates and a real TLS handshake.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, createServer, type TLSSocket } from "node:tls";
import { describe, expect, it } from "vitest";
import { peerCertificateChain, X509Authenticator } from "../../../src/apiserver/auth/authn-x509.js";
import { isPlatformError } from "../../../src/errors.js";
import { decodeSinglePem } from "../../../src/pki/pem.js";
import { intermediateCa, issueCert, T0, CLIENT_CA } from "./fixtures.js";
import { testCa } from "../../fixtures/ca.js";
import { tempDir } from "../../fixtures/temp-dir.js";

async function authenticator(o: { at?: number; pool?: string } = {}) {
  const clock = { now: () => o.at ?? T0 + 3600_000 };
  return new X509Authenticator({ trustPool: o.pool ?? (await testCa(CLIENT_CA)).certPem, clock });
}

describe("X509Authenticator", () => {
  it("takes the user from CN and the groups from O, adding system:authenticated", async () => {
    const cert = await issueCert({ cn: "system:node:worker-1", o: ["system:nodes", "ops"] });
    const r = (await authenticator()).authenticate([cert.der]);
    expect(r).toEqual({ user: { username: "system:node:worker-1", groups: ["system:nodes", "ops", "system:authenticated"] } });
  });

  it("answers undefined when no certificate was presented", async () => {
    expect((await authenticator()).authenticate([])).toBeUndefined();
  });

  it.each([
    ["refuses a certificate that has expired", { to: 3600 }, T0 + 7200_000, /has expired/],
    ["refuses a certificate that is not yet valid", { from: 3600 }, T0, /not yet valid/],
    ["accepts a certificate in its last second", { to: 3600 }, T0 + 3600_000, undefined],
  ])("%s", async (_name, validity, at, error) => {
    const cert = await issueCert(validity);
    const r = (await authenticator({ at })).authenticate([cert.der]);
    if (error) expect(r).toEqual({ error: expect.stringMatching(error) });
    else expect(r).toHaveProperty("user.username", "bob");
  });

  it.each([
    ["server auth only", ["digital signature", "server auth"]],
    ["no extended key usage at all", ["digital signature"]],
  ])("refuses a leaf without the client auth usage (%s)", async (_name, usages) => {
    const cert = await issueCert({ usages });
    expect((await authenticator()).authenticate([cert.der])).toEqual({ error: expect.stringMatching(/incompatible key usage/) });
  });

  it("refuses a certificate issued by a CA outside the trust pool", async () => {
    const cert = await issueCert({ issuer: await testCa({ commonName: "another CA" }) });
    expect((await authenticator()).authenticate([cert.der])).toEqual({ error: "x509: certificate signed by unknown authority" });
  });

  it("accepts a certificate of any CA in a pool of several", async () => {
    const other = await testCa({ commonName: "another CA" });
    const pool = `${other.certPem}${(await testCa(CLIENT_CA)).certPem}`;
    const cert = await issueCert({ issuer: other });
    expect((await authenticator({ pool })).authenticate([cert.der])).toHaveProperty("user.username", "bob");
  });

  it("follows an intermediate the client presents, and refuses the leaf without it", async () => {
    const mid = await intermediateCa();
    const cert = await issueCert({ issuer: mid, cn: "carol" });
    const a = await authenticator();
    expect(a.authenticate([cert.der, mid.der])).toHaveProperty("user.username", "carol");
    expect(a.authenticate([cert.der])).toEqual({ error: "x509: certificate signed by unknown authority" });
  });

  it("accepts five presented certificates and refuses six, by default; maxChainLength moves the limit", async () => {
    const mids = await intermediates(5);
    const leaf = await issueCert({ cn: "ivan", issuer: mids[0]! });
    expect((await authenticator()).authenticate([leaf.der, ...mids.map((m) => m.der)])).toEqual({ error: "x509: the client presented 6 certificates, more than the limit of 5" });
    const fromFourth = await issueCert({ cn: "judy", issuer: mids[1]! });
    expect((await authenticator()).authenticate([fromFourth.der, ...mids.slice(1).map((m) => m.der)])).toHaveProperty("user.username", "judy");
    const six = new X509Authenticator({ trustPool: (await testCa(CLIENT_CA)).certPem, clock: { now: () => T0 + 3600_000 }, maxChainLength: 6 });
    expect(six.authenticate([leaf.der, ...mids.map((m) => m.der)])).toHaveProperty("user.username", "ivan");
  });

  it.each([0, 17, 2.5])("refuses maxChainLength %s at construction", async (max) => {
    const build = async () => new X509Authenticator({ trustPool: (await testCa(CLIENT_CA)).certPem, clock: { now: () => T0 }, maxChainLength: max });
    await expect(build()).rejects.toThrow(/maxChainLength/);
  });

  it("refuses an intermediate whose own usages exclude client auth", async () => {
    const mid = await intermediateCa({ cn: "server-only intermediate", usages: ["cert sign", "server auth"] });
    const cert = await issueCert({ issuer: mid });
    expect((await authenticator()).authenticate([cert.der, mid.der])).toEqual({ error: expect.stringMatching(/intermediate certificate does not permit client auth/) });
  });

  it("refuses a leaf posing as an intermediate (not a CA)", async () => {
    const fakeMid = await issueCert({ cn: "not-a-ca" });
    const cert = await issueCert({ cn: "dave", issuer: await testCa({ commonName: "another CA" }) });
    expect((await authenticator()).authenticate([cert.der, fakeMid.der])).toEqual({ error: "x509: certificate signed by unknown authority" });
  });

  it("refuses a certificate without a common name", async () => {
    const cert = await issueCert({ cn: "" });
    expect((await authenticator()).authenticate([cert.der])).toEqual({ error: "x509: the client certificate has no common name" });
  });

  it.each([
    ["random bytes", Uint8Array.from([0x30, 0x03, 1, 2, 3])],
    ["an empty buffer", new Uint8Array()],
  ])("answers an error, not an exception, for %s", async (_name, der) => {
    expect((await authenticator()).authenticate([der])).toEqual({ error: "x509: the client certificate cannot be parsed" });
  });

  it("refuses an unusable trust pool at construction", async () => {
    let err: unknown;
    try {
      new X509Authenticator({ trustPool: "no pem here", clock: { now: () => T0 } });
    } catch (e) {
      err = e;
    }
    expect(isPlatformError(err, "INVALID_OPTION")).toBe(true);
  });

  it("re-checks validity at every call for a chain it has seen (leaf and intermediate)", async () => {
    let now = T0 + 1000;
    const mid = await intermediateCa({ to: 7200 });
    const cert = await issueCert({ issuer: mid, to: 3600 });
    const a = new X509Authenticator({ trustPool: (await testCa(CLIENT_CA)).certPem, clock: { now: () => now } });
    const chain = [cert.der, mid.der];
    expect(a.authenticate(chain)).toHaveProperty("user.username", "bob");
    now = T0 + 5000_000;
    expect(a.authenticate(chain)).toEqual({ error: expect.stringMatching(/^x509: certificate has expired/) });
    now = T0 + 1000;
    expect(a.authenticate(chain)).toHaveProperty("user.username", "bob");
  });

  it("refuses a chain it accepted once the pool no longer holds its CA", async () => {
    const first = await testCa(CLIENT_CA);
    let pool = first.certPem;
    const a = new X509Authenticator({ trustPool: () => pool, clock: { now: () => T0 + 1000 } });
    const cert = await issueCert();
    expect(a.authenticate([cert.der])).toHaveProperty("user.username", "bob");
    pool = (await testCa({ commonName: "rotated CA" })).certPem;
    expect(a.authenticate([cert.der])).toEqual({ error: "x509: certificate signed by unknown authority" });
  });

  it("reads a rotated pool from a function", async () => {
    let pool = (await testCa(CLIENT_CA)).certPem;
    const a = new X509Authenticator({ trustPool: () => pool, clock: { now: () => T0 + 1000 } });
    const other = await testCa({ commonName: "rotated CA" });
    const cert = await issueCert({ issuer: other });
    expect(a.authenticate([cert.der])).toHaveProperty("error");
    pool = other.certPem;
    expect(a.authenticate([cert.der])).toHaveProperty("user.username", "bob");
  });
});

describe("X509Authenticator with openssl-made certificates", () => {
  const dir = tempDir();
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"], timeout: 20_000 }).toString();

  // openssl dates the leaf from the machine's time; a long lifetime makes it cover the fixed test clock.
  async function opensslCert(eku: string): Promise<Uint8Array> {
    const ca = await testCa(CLIENT_CA);
    writeFileSync(join(dir, "ca.pem"), ca.certPem);
    writeFileSync(join(dir, "ca.key"), ca.keyPem, { mode: 0o600 });
    writeFileSync(join(dir, "ext.cnf"), `extendedKeyUsage=${eku}\nkeyUsage=critical,digitalSignature\n`);
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "leaf.key", "-subj", "/O=qa/CN=erin", "-out", "leaf.csr");
    openssl("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "36500", "-extfile", "ext.cnf", "-out", "leaf.pem");
    return decodeSinglePem(openssl("x509", "-in", "leaf.pem"), "CERTIFICATE").der;
  }

  it("accepts a client certificate openssl signed with the pool's CA", async () => {
    const a = new X509Authenticator({ trustPool: (await testCa(CLIENT_CA)).certPem, clock: { now: () => T0 + 3600_000 } });
    expect(a.authenticate([await opensslCert("clientAuth")])).toEqual({ user: { username: "erin", groups: ["qa", "system:authenticated"] } });
  });

  it("refuses an openssl certificate for server auth only", async () => {
    const a = new X509Authenticator({ trustPool: (await testCa(CLIENT_CA)).certPem, clock: { now: () => T0 + 3600_000 } });
    expect(a.authenticate([await opensslCert("serverAuth")])).toHaveProperty("error");
  });
});

/** `count` intermediates, each issued by the one before (the first by the shared client CA), last first. */
async function intermediates(count: number) {
  const out: Awaited<ReturnType<typeof intermediateCa>>[] = [];
  for (let i = 0; i < count; i++) out.unshift(await intermediateCa({ cn: `intermediate ${i}`, ...(out[0] && { issuer: out[0] }) }));
  return out;
}

/**
 * The chain the server reads from one real handshake in which the client presents its leaf and its intermediates
 * (one by default); `ca` is the server's own list of client CAs (node appends the anchor from it to the detailed peer
 * certificate).
 */
async function presentedChain(cn: string, o: { ca?: string; intermediates?: number } = {}) {
  const serverCa = await testCa({ commonName: "server CA" });
  const server = await issueCert({ cn: "localhost", usages: ["digital signature", "server auth"], issuer: serverCa });
  const mids = await intermediates(o.intermediates ?? 1);
  const client = await issueCert({ cn, o: ["tls"], issuer: mids[0]! });
  const chain = await new Promise<Uint8Array[]>((resolve) => {
    const srv = createServer({ cert: server.pem, key: server.keyPem, ...(o.ca && { ca: o.ca }), requestCert: true, rejectUnauthorized: false }, (socket: TLSSocket) => {
      resolve(peerCertificateChain(socket));
      socket.end();
      srv.close();
    });
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      const c = connect({ host: "127.0.0.1", port, cert: client.pem + mids.map((m) => m.certPem).join(""), key: client.keyPem, rejectUnauthorized: false });
      c.on("error", () => undefined);
      c.on("end", () => c.destroy());
    });
  });
  return { chain, sent: [client.der, ...mids.map((m) => m.der)] };
}

const base64 = (ders: readonly Uint8Array[]) => ders.map((der) => Buffer.from(der).toString("base64"));

describe("peerCertificateChain over a real TLS handshake", () => {
  it("hands the presented chain to the authenticator, leaf first", async () => {
    const a = new X509Authenticator({ trustPool: (await testCa(CLIENT_CA)).certPem, clock: { now: () => T0 + 3600_000 } });
    const { chain } = await presentedChain("frank");
    expect(a.authenticate(chain)).toEqual({ user: { username: "frank", groups: ["tls", "system:authenticated"] } });
  });

  it("reads exactly what the client sent, without the anchor the server's own CA list would add", async () => {
    const { chain, sent } = await presentedChain("grace", { ca: (await testCa(CLIENT_CA)).certPem });
    expect(base64(chain)).toEqual(base64(sent));
  });

  it("accepts a leaf and four intermediates from a server with its own CA list: five presented, the anchor not counted", async () => {
    const anchor = (await testCa(CLIENT_CA)).certPem;
    const { chain, sent } = await presentedChain("heidi", { ca: anchor, intermediates: 4 });
    expect(base64(chain)).toEqual(base64(sent));
    const a = new X509Authenticator({ trustPool: anchor, clock: { now: () => T0 + 3600_000 } });
    expect(a.authenticate(chain)).toEqual({ user: { username: "heidi", groups: ["tls", "system:authenticated"] } });
  });

  it("gives an empty chain for a socket without a client certificate", () => {
    expect(peerCertificateChain(undefined)).toEqual([]);
  });
});

describe("X509Authenticator pool rotation", () => {
  it("follows a pool of several CAs (a fresh array at each read) when one of them is replaced", async () => {
    // The server's pool: the cluster's CAs and the --client-ca-file ones, concatenated anew at every request.
    const extra = (await testCa({ commonName: "extra CA" })).certPem;
    let cluster = [(await testCa(CLIENT_CA)).certPem];
    const a = new X509Authenticator({ trustPool: () => cluster.concat(extra), clock: { now: () => T0 + 1000 } });
    const next = await testCa({ commonName: "next cluster CA" });
    const chain = [(await issueCert({ issuer: next })).der];
    // The same chain array again (one per connection), refused while its CA is not in the pool, then accepted.
    expect(a.authenticate(chain)).toEqual({ error: "x509: certificate signed by unknown authority" });
    expect(a.authenticate(chain)).toEqual({ error: "x509: certificate signed by unknown authority" });
    cluster = [cluster[0]!, next.certPem];
    expect(a.authenticate(chain)).toHaveProperty("user.username", "bob");
    cluster = [cluster[0]!];
    expect(a.authenticate(chain)).toEqual({ error: "x509: certificate signed by unknown authority" });
  });

  it("keeps the last good pool when a rotated one does not parse", async () => {
    let pool = (await testCa(CLIENT_CA)).certPem;
    const a = new X509Authenticator({ trustPool: () => pool, clock: { now: () => T0 + 1000 } });
    const cert = await issueCert();
    pool = "-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n";
    expect(a.authenticate([cert.der])).toHaveProperty("user.username", "bob");
  });
});
