// Batched native issuance against the JavaScript path: byte-identical certificates for the same inputs, and no request
// issued natively that parseCsr refuses (hand-made bad requests, and fast-check mutations of signed requests).
import { execFileSync } from "node:child_process";
import { generateKeyPairSync, sign, X509Certificate, type KeyObject } from "node:crypto";
import fc from "fast-check";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { parseCsr } from "../../src/pki/csr.js";
import { unverifiedKey } from "../../src/pki/csr-signature.js";
import { DerReader, Tag } from "../../src/pki/der.js";
import { issueDerNatively, Issuer } from "../../src/pki/issue.js";
import { issuedNatively, issueNative, nativeBatchAvailable, nativeResult, nativePemText, NO_TEMPLATE } from "../../src/pki/native-issue.js";
import { encodePem } from "../../src/pki/pem.js";
import { SigningPool } from "../../src/pki/signing-pool.js";
import { processBatch } from "../../src/pki/signing-pool-worker.js";
import { resultAt, type WireBatch } from "../../src/pki/signing-pool-wire.js";
import { crlDistributionPointsExtension } from "../../src/pki/tbs-template.js";
import type { CertificateProfile } from "../../src/pki/types.js";
import { testCa } from "../fixtures/ca.js";
import { csr } from "../fixtures/csr.js";
import { BAD_HAND_CSRS } from "./bad-csrs.js";
import { attribute, extension, handCsr, MS_EXTENSION_REQUEST, PKCS9_EXTENSION_REQUEST } from "./csr-builder.js";
import { bits, ctx, int, name, nul, oid, seq, str, tlv, utf8 } from "./der-builder.js";
import { mutation } from "./der-mutations.js";
import { DAY_FROM_T0, profile } from "./issuance-fixtures.js";

// One serial for both paths, so that a certificate depends only on the request, the CA, the profile and the window.
const SERIAL = Uint8Array.from({ length: 16 }, (_, i) => 0x11 + i);
vi.mock("../../src/pki/tbs-template.js", async (original) => ({
  ...(await original<typeof import("../../src/pki/tbs-template.js")>()),
  randomSerial: () => SERIAL.slice(),
  randomSerials: (count: number) => {
    const out = new Uint8Array(16 * count);
    for (let i = 0; i < count; i++) out.set(SERIAL, 16 * i);
    return out;
  },
}));

const validity = DAY_FROM_T0;
const crlDp = [crlDistributionPointsExtension("http://crl.example/ca.crl")];
type Outcome = { readonly der: Uint8Array; readonly pem: string } | { readonly code: string; readonly message: string };

/** One request through the native call alone: its certificate, or undefined when it was left to JavaScript. */
function nativeOnly(issuer: Issuer, der: Uint8Array, p: CertificateProfile, signerExtensions?: readonly Uint8Array[]) {
  const template = issuer.nativeTemplate(p, validity, signerExtensions)!;
  expect(template).toBeDefined();
  const batch = issueNative([template], Uint16Array.of(0), der, Uint32Array.of(der.length))!;
  return issuedNatively(batch, 0) ? nativeResult(batch, 0, nativePemText(batch)) : undefined;
}

/** The JavaScript path: parseCsr, then Issuer.issue. */
function javascript(issuer: Issuer, der: Uint8Array, p: CertificateProfile, signerExtensions?: readonly Uint8Array[]): Outcome {
  try {
    const cert = issuer.issue({ csr: parseCsr(der, { remember: false }), profile: p, validity, ...(signerExtensions && { signerExtensions }) });
    return { der: cert.der, pem: cert.pem };
  } catch (err) {
    if (!isPlatformError(err)) throw err;
    return { code: err.code, message: err.message };
  }
}

const tbsOf = (der: Uint8Array): Uint8Array => {
  const cert = new DerReader(der).sequence("certificate");
  return cert.bytes(cert.next(Tag.SEQUENCE, "tbs"));
};

/**
 * Same TBSCertificate (and, for a deterministic RSA signature, the same certificate) as the JavaScript path, and a
 * signature OpenSSL verifies (`verify`: not for fuzzed requests, whose names both paths copy but OpenSSL may not read).
 */
function expectSameCertificate(issuer: Issuer, native: { der: Uint8Array; pem: string }, js: Outcome, verify = true): void {
  if ("code" in js) throw new Error(`natively issued, refused by JavaScript: ${js.code} ${js.message}`);
  expect(Buffer.from(tbsOf(native.der)).toString("hex")).toBe(Buffer.from(tbsOf(js.der)).toString("hex"));
  if (issuer.ca.keyAlgorithm === "rsa") expect(Buffer.from(native.der).equals(Buffer.from(js.der))).toBe(true);
  if (verify) expect(new X509Certificate(native.der).verify(issuer.ca.publicKey)).toBe(true);
  expect(native.pem).toBe(encodePem("CERTIFICATE", native.der));
}

const issuers: Record<string, Issuer> = {};
beforeAll(async () => {
  for (const keyType of ["p256", "p384", "rsa2048"] as const) issuers[keyType] = new Issuer((await testCa({ keyType })).ca);
});

/**
 * Requests of every shape the native reader issues: key types, name string types, extension and SAN forms. OpenSSL
 * reads every certificate issued from them (both readers refuse the subject values it could not: bad-csrs.ts).
 */
async function acceptedRequests(): Promise<[string, Uint8Array][]> {
  const node = await csr({ cn: "system:node:a", o: ["system:nodes"], dns: ["a.example"], ip: ["10.0.0.1", "2001:db8::1"], email: ["a@b.c"], uri: ["spiffe://x/y"] });
  const names = name(
    [["2.5.4.6", str(0x13, "DE")]],
    [["2.5.4.10", utf8("Grüße ✓ 𝄞")], ["2.5.4.11", tlv(0x1e, [0x00, 0x41, 0x00, 0xe9])]],
    [["2.5.4.7", tlv(0x1c, [0, 0, 0, 0x41])], ["2.5.4.8", tlv(0x14, [0xe9])], ["2.5.4.5", str(0x12, "12 34")]],
    [["0.9.2342.19200300.100.1.25", str(0x16, "dc")], ["1.2.3.4", seq(int(7))]],
  );
  const sans = seq(tlv(0x82, [0x61]), tlv(0x87, [1, 2, 3, 4]), tlv(0x87, new Uint8Array(16)), tlv(0x81, [0x62]), tlv(0x86, [0x63]), ctx(0, true, oid("1.2.3"), ctx(0, true, utf8("x"))), tlv(0x88, [0x2a]), ctx(4, true, name([["2.5.4.3", utf8("d")]])));
  const custom = extension("1.2.3.4", seq(int(1)), true);
  return [
    ["a node-agent fixture", node.der],
    ["a P-384 fixture", (await csr({ cn: "p384", key: "p384", dns: ["p.example"] })).der],
    ["a P-521 fixture", (await csr({ cn: "p521", key: "p521" })).der],
    ["an RSA fixture asking for a CA", (await csr({ cn: "rsa", ou: ["u"], key: "rsa2048", requestCa: true })).der],
    ["every name string type", handCsr({ subject: names, extensions: [extension("2.5.29.17", sans), custom] })],
    ["an empty subject with a SAN", handCsr({ subject: seq(), extensions: [extension("2.5.29.17", seq(tlv(0x82, [0x61])), false)] })],
    ["the Microsoft extensionRequest", handCsr({ extensions: [custom], extensionRequestOid: MS_EXTENSION_REQUEST })],
    ["no attributes", handCsr({ omitAttributes: true })],
    ["a challengePassword beside the extensions", handCsr({ attributes: [attribute("1.2.840.113549.1.9.7", utf8("pw"))], extensions: [custom] })],
  ];
}

const profiles: [string, CertificateProfile][] = [
  ["the default profile", profile()],
  ["no SANs", profile({ includeSans: false })],
  ["copied extensions", profile({ copyExtensions: ["1.2.3.4", "2.5.29.19", "not an oid"] })],
  ["a CA profile", profile({ usages: ["cert sign", "crl sign"], isCa: true, pathLen: 0 })],
];

describe("native batched issuance", () => {
  it("is built and enabled", () => {
    expect(nativeBatchAvailable()).toBe(true);
  });

  it("issues the same certificates as the JavaScript path for every request shape, CA, profile and signer extension", async () => {
    const requests = await acceptedRequests();
    for (const [caName, issuer] of Object.entries(issuers)) {
      for (const [requestName, der] of requests) {
        for (const [profileName, p] of profiles) {
          for (const extra of [undefined, crlDp]) {
            const native = nativeOnly(issuer, der, p, extra);
            expect(native, `${caName} CA, ${requestName}, ${profileName}`).toBeDefined();
            expectSameCertificate(issuer, native!, javascript(issuer, der, p, extra));
          }
        }
      }
    }
  });

  it("leaves Ed25519 keys, RSASSA-PSS signatures and compressed points to the JavaScript path, which issues them", async () => {
    const pss = execFileSync("openssl", ["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "/dev/null", "-subj", "/CN=pss", "-sigopt", "rsa_padding_mode:pss", "-outform", "DER"], { stdio: ["ignore", "pipe", "ignore"] });
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const { x, y } = ec.publicKey.export({ format: "jwk" });
    const point = [Buffer.from(y!, "base64url").at(-1)! & 1 ? 3 : 2, ...Buffer.from(x!, "base64url")];
    const compressed = handCsr({ spki: seq(seq(oid("1.2.840.10045.2.1"), oid("1.2.840.10045.3.1.7")), bits(point)), privateKey: ec.privateKey });
    const ed = (await csr({ cn: "ed", key: "ed25519" })).der;
    for (const der of [ed, new Uint8Array(pss), compressed]) {
      expect(nativeOnly(issuers.p256!, der, profile())).toBeUndefined();
      const result = resultAt(processBatch(new Map([[1, issuers.p256!]]), wireBatch([der])), 0);
      expect("der" in result && new X509Certificate(result.der).verify(issuers.p256!.ca.publicKey)).toBe(true);
    }
  });

  it.each(BAD_HAND_CSRS)("refuses %s as parseCsr does", (_name, options, code, fragment) => {
    const der = handCsr(options);
    expect(nativeOnly(issuers.p256!, der, profile())).toBeUndefined();
    const result = resultAt(processBatch(new Map([[1, issuers.p256!]]), wireBatch([der])), 0);
    expect(result).toMatchObject({ code });
    expect("message" in result && result.message).toContain(fragment);
  });

  it("refuses a flipped signature bit, trailing bytes, truncation and oversized requests", async () => {
    const good = (await csr({ cn: "good" })).der;
    const flipped = good.slice();
    flipped[flipped.length - 3]! ^= 1;
    const trailing = Uint8Array.from([...good, 0]);
    const big = handCsr({ extensions: [extension("1.2.3.4", tlv(0x04, new Uint8Array(66_000)))] });
    for (const der of [flipped, trailing, good.subarray(0, good.length - 1), big]) {
      expect(nativeOnly(issuers.p256!, der, profile())).toBeUndefined();
      expect("code" in javascript(issuers.p256!, der, profile())).toBe(true);
    }
  });

  it("issues a batch mixing requests it issues, requests left to JavaScript and refused ones, each in its place", async () => {
    const good = (await csr({ cn: "one", freshKey: true })).der;
    const ed = (await csr({ cn: "two", key: "ed25519" })).der;
    const bad = handCsr({ version: 1 });
    const results = processBatch(new Map([[1, issuers.rsa2048!]]), wireBatch([good, ed, bad, good]));
    const [a, b, c, d] = [0, 1, 2, 3].map((i) => resultAt(results, i));
    expect(c).toMatchObject({ code: "CSR_INVALID" });
    for (const r of [a!, b!, d!]) expect("der" in r && new X509Certificate(r.der).verify(issuers.rsa2048!.ca.publicKey)).toBe(true);
    expect("der" in a! && "der" in d! && Buffer.from(a.der).equals(Buffer.from(d.der))).toBe(true);
    expect("serialHex" in b! && b.serialHex).toBe(Buffer.from(SERIAL).toString("hex"));
  });
});

describe("native issuance of a lone request on the calling thread", () => {
  it("issues what the JavaScript path issues, remembers the request as verified, and issues a known request natively again", async () => {
    const der = (await csr({ cn: "lone", dns: ["lone.example"], freshKey: true })).der;
    const issuer = issuers.rsa2048!;
    expect(unverifiedKey(der)).toBeDefined();
    const native = issueDerNatively({ ca: issuer.ca, der, profile: profile(), validity, signerExtensions: crlDp })!;
    expect(native).toMatchObject({ notBefore: validity.notBefore, notAfter: validity.notAfter, serialHex: Buffer.from(SERIAL).toString("hex") });
    expectSameCertificate(issuer, native, javascript(issuer, der, profile(), crlDp));
    // parseCsr's memory now knows it: a second issuance of the same bytes is native too, without the check.
    expect(unverifiedKey(der)).toBeUndefined();
    expectSameCertificate(issuer, issueDerNatively({ ca: issuer.ca, der, profile: profile(), validity })!, javascript(issuer, der, profile()));
  });

  it("gives SigningPool's calling-thread path the JavaScript path's certificates and errors", async () => {
    const pool = new SigningPool({ workers: 0 });
    const ca = issuers.rsa2048!.ca;
    const der = (await csr({ cn: "pooled", freshKey: true })).der;
    const issued = await pool.issue({ ca, csr: der, profile: profile(), validity });
    expect(Buffer.from(issued.der).equals(Buffer.from((javascript(issuers.rsa2048!, der, profile()) as { der: Uint8Array }).der))).toBe(true);
    for (const [, options, code] of BAD_HAND_CSRS.slice(0, 6)) {
      await expect(pool.issue({ ca, csr: handCsr(options), profile: profile(), validity })).rejects.toMatchObject({ code });
    }
    expect(pool.counts.inline).toBe(7);
    await pool.close();
  });
});

describe("native issuance on the pool's workers", () => {
  it("issues certificates and refuses bad requests on worker threads running the built code, as the calling thread does", async () => {
    // The built worker finds the addon beside the package (dist/ under the repository); `npm run build` first.
    const workerScript = new URL("../../dist/src/pki/signing-pool-worker.js", import.meta.url);
    const pool = new SigningPool({ workers: 2, batchSize: 8, startCostMs: 0, workerScript });
    const ca = issuers.p256!.ca;
    try {
      const good = await Promise.all(Array.from({ length: 12 }, async (_, i) => (await csr({ cn: `w${i}`, dns: [`w${i}.example`], freshKey: true })).der));
      const bad = BAD_HAND_CSRS.slice(0, 4).map(([, options, code]) => [handCsr(options), code] as const);
      const jobs = [...good.map((der) => [der, undefined] as const), ...bad];
      const results = await Promise.allSettled(jobs.map(([der], i) => pool.issue({ ca, csr: der, profile: profile(), validity }, jobs.length - i)));
      expect(pool.counts.workers).toBe(jobs.length);
      results.forEach((r, i) => {
        const [der, code] = jobs[i]!;
        if (code !== undefined) return expect(r).toMatchObject({ status: "rejected", reason: { code } });
        expect(r.status).toBe("fulfilled");
        const cert = (r as PromiseFulfilledResult<{ der: Uint8Array; pem: string }>).value;
        const x = new X509Certificate(cert.pem);
        expect(x.verify(ca.publicKey)).toBe(true);
        expect(x.subject).toBe(`CN=w${i}`);
        // Same TBSCertificate as the JavaScript path once the serial is the same.
        const js = javascript(issuers.p256!, der, profile()) as { der: Uint8Array };
        const tbs = tbsOf(cert.der).slice();
        // After the TBSCertificate's header, version [0] (5 octets) and the serial's INTEGER header (02 10).
        const serialAt = (tbs[1]! < 0x80 ? 2 : 2 + (tbs[1]! & 0x7f)) + 5 + 2;
        tbs.set(SERIAL, serialAt);
        expect(Buffer.from(tbs).equals(Buffer.from(tbsOf(js.der)))).toBe(true);
      });
    } finally {
      await pool.close();
    }
  });
});

/** A batch as SigningPool sends it: DER requests back to back, one CA (id 1), the default profile. */
function wireBatch(ders: readonly Uint8Array[]): WireBatch {
  const ends = new Uint32Array(ders.length);
  let at = 0;
  ders.forEach((d, i) => (ends[i] = at += d.length));
  const bytes = new Uint8Array(at);
  ders.forEach((d, i) => bytes.set(d, ends[i]! - d.length));
  const times = new Float64Array(2 * ders.length);
  for (let i = 0; i < ders.length; i++) times.set([validity.notBefore.getTime(), validity.notAfter.getTime()], 2 * i);
  const count = ders.length;
  return { csrBytes: bytes, csrEnds: ends, texts: {}, parsed: {}, caIds: new Uint32Array(count).fill(1), profileIndex: new Uint16Array(count), extensionIndex: new Int16Array(count).fill(-1), times, profiles: [profile()], extensionSets: [], ruleIds: new Uint32Array(count), requests: {} };
}

// ---- fuzzing: requests re-signed after their CertificationRequestInfo was mutated reach every check of the reader ----

interface Seed {
  readonly info: Uint8Array;
  readonly key: KeyObject;
  readonly hash: string;
  readonly algorithm: Uint8Array;
}

function seeds(): Seed[] {
  const p256 = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" });
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const spki = (k: KeyObject) => new Uint8Array(k.export({ format: "der", type: "spki" }));
  const sans = seq(tlv(0x82, [0x61, 0x2e, 0x62]), tlv(0x87, [10, 0, 0, 1]), tlv(0x81, [0x61]), tlv(0x86, [0x75]), ctx(0, true, oid("1.2.3"), ctx(0, true, utf8("x"))));
  const exts = (...e: Uint8Array[]) => ctx(0, true, attribute(PKCS9_EXTENSION_REQUEST, seq(...e)));
  const subject = name([["2.5.4.10", str(0x13, "system:nodes".replace(":", " "))]], [["2.5.4.3", utf8("système")], ["2.5.4.11", tlv(0x1e, [0, 0x61])]]);
  const info = (key: KeyObject, ...rest: Uint8Array[]) => seq(int(0), subject, spki(key), ...rest);
  return [
    { info: info(p256.publicKey, exts(extension("2.5.29.17", sans), extension("1.2.3.4", seq(), true))), key: p256.privateKey, hash: "sha256", algorithm: seq(oid("1.2.840.10045.4.3.2")) },
    { info: info(p384.publicKey, exts(extension("2.5.29.17", sans, false))), key: p384.privateKey, hash: "sha384", algorithm: seq(oid("1.2.840.10045.4.3.3")) },
    { info: info(rsa.publicKey, exts(extension("2.5.29.17", sans))), key: rsa.privateKey, hash: "sha256", algorithm: seq(oid("1.2.840.113549.1.1.11"), nul()) },
    { info: info(p256.publicKey), key: p256.privateKey, hash: "sha256", algorithm: seq(oid("1.2.840.10045.4.3.2")) },
  ];
}

const signed = (s: Seed, info: Uint8Array): Uint8Array => seq(info, s.algorithm, bits(sign(s.hash, info, s.key)));

describe("native batched issuance under mutation", () => {
  const all = seeds();
  const copyProfile = profile({ copyExtensions: ["1.2.3.4"] });

  /** A natively issued request is one JavaScript issues the same; one JavaScript refuses is never issued natively. */
  function agree(der: Uint8Array): boolean {
    const issuer = issuers.p256!;
    const native = nativeOnly(issuer, der, copyProfile);
    if (native !== undefined) expectSameCertificate(issuer, native, javascript(issuer, der, copyProfile), false);
    return native !== undefined;
  }

  it("issues every unmutated seed natively", () => {
    for (const s of all) expect(agree(signed(s, s.info))).toBe(true);
  });

  it("agrees with the JavaScript path on 4,000 requests whose signed part was mutated and signed again", () => {
    let issued = 0;
    fc.assert(
      fc.property(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 3 }), (pick, mutations) => {
        const s = all[pick % all.length]!;
        const info = mutations.reduce((d, m) => (d.length === 0 ? d : m(d)), s.info);
        if (agree(signed(s, info))) issued++;
      }),
      { numRuns: 4_000 },
    );
    // Some mutations keep a request valid (a changed name character, a changed SAN octet): the comparison ran on those.
    expect(issued).toBeGreaterThan(0);
  });

  it("agrees with the JavaScript path on 4,000 mutated whole requests", () => {
    fc.assert(
      fc.property(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 3 }), (pick, mutations) => {
        const s = all[pick % all.length]!;
        const seed = signed(s, s.info);
        const der = mutations.reduce((d, m) => (d.length === 0 ? d : m(d)), seed);
        agree(der);
      }),
      { numRuns: 4_000 },
    );
  });

  it("issues nothing from random bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }).map((b) => Uint8Array.from([0x30, ...b])), (der) => {
        expect(agree(der)).toBe(false);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("native batched issuance switched off", () => {
  it("processes batches in JavaScript with PLATFORM_CA_NATIVE=0", async () => {
    const f = await csr({ cn: "off", freshKey: true });
    const dist = (m: string) => JSON.stringify(new URL(`../../dist/src/pki/${m}`, import.meta.url).href);
    const script = `
      const { nativeBatchAvailable } = await import(${dist("native-issue.js")});
      const { processBatch, issuerFor } = await import(${dist("signing-pool-worker.js")});
      const { resultAt } = await import(${dist("signing-pool-wire.js")});
      const { generateCa } = await import(${dist("ca.js")});
      const { resolveUsages } = await import(${dist("usages.js")});
      const { X509Certificate } = await import("node:crypto");
      const der = new Uint8Array(Buffer.from(process.argv[1], "base64"));
      const { ca } = await generateCa({ commonName: "off", keyType: "p256", lifetimeSeconds: 3600, now: new Date() });
      const profile = { usages: resolveUsages(["digital signature", "client auth"]), isCa: false, includeSans: true };
      const now = Date.now();
      const batch = { csrBytes: der, csrEnds: Uint32Array.of(der.length), texts: {}, parsed: {}, caIds: Uint32Array.of(1), profileIndex: Uint16Array.of(0),
        extensionIndex: Int16Array.of(-1), times: Float64Array.of(now, now + 60000), profiles: [profile], extensionSets: [], ruleIds: Uint32Array.of(0), requests: {} };
      const r = resultAt(processBatch(new Map([[1, issuerFor(ca)]]), batch), 0);
      console.log(JSON.stringify({ native: nativeBatchAvailable(), verified: new X509Certificate(r.der).verify(ca.publicKey) }));`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script, Buffer.from(f.der).toString("base64")], { env: { ...process.env, PLATFORM_CA_NATIVE: "0" } }).toString();
    expect(JSON.parse(out)).toEqual({ native: false, verified: true });
  });

  it("leaves a job without a template alone", () => {
    const template = issuers.p256!.nativeTemplate(profile(), validity)!;
    const der = handCsr();
    const batch = issueNative([template], Uint16Array.of(NO_TEMPLATE), der, Uint32Array.of(der.length))!;
    expect(issuedNatively(batch, 0)).toBe(false);
  });
});
