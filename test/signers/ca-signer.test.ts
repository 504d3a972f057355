// The CA-backed base: option checks, common request checks, the presented chain, CA providers and errors.
import { Writable } from "node:stream";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { CaSource } from "../../src/pki/ca-source.js";
import type { CaKeyPair } from "../../src/pki/types.js";
import type { CaInput } from "../../signers/ca-backing.js";
import { CaSigner, type CaSignerOptions } from "../../signers/ca-signer.js";
import { DAY, HOUR, intermediateCa, NOW, pemBlocks, rejection, signingRequest, type RequestOptions, SIGNERS_CA } from "./fixtures.js";
import { testCa } from "../fixtures/ca.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { tryRun } from "../fixtures/process.js";

const NAME = "example.com/base";
const { ca } = await testCa(SIGNERS_CA);
const dir = tempDir("ca-signer-");

const signer = (options: Partial<CaSignerOptions> = {}) => new CaSigner({ signerName: NAME, ca, check: () => undefined, now: () => NOW, ...options });
const request = (o: RequestOptions = {}) => signingRequest({ signerName: NAME, cn: "client", ...o });

describe("CaSigner options", () => {
  it.each([
    ["a signer name without path", { signerName: "example.com" }, 'expected `signerName` to be a qualified name domain/path, got "example.com"'],
    ["a cluster maximum below 10 minutes", { maxDurationSeconds: 599 }, "expected `maxDurationSeconds` to be an integer ≥ 600, got 599"],
    ["a fractional cluster maximum", { maxDurationSeconds: 3600.5 }, "expected `maxDurationSeconds` to be an integer ≥ 600, got 3600.5"],
    ["a missing CA", { ca: undefined as unknown as CaInput }, "expected `ca` to be a CA key pair or a CA source, got nothing"],
    ["a CA object without current()", { ca: {} as CaInput }, "expected `ca` to be a CA key pair or a CA source, got []"],
    ["a missing rule check", { check: undefined as unknown as CaSignerOptions["check"] }, 'expected `check` to be a function, got "undefined"'],
  ])("refuses %s", (_, options, message) => {
    expect(() => signer(options)).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message }));
  });
});

describe("CaSigner request checks", () => {
  it.each([
    ["accepts the shortest lifetime a request may ask", { expirationSeconds: 600 }, true],
    ["refuses a request named for another signer", { signerName: "example.com/other" }, /^the request names signer example\.com\/other, not example\.com\/base$/],
    ["refuses a request without usages", { usages: [] }, /needs at least one usage in spec\.usages/],
    ["refuses an unknown usage", { usages: ["digital signature", "magic"] }, /usage "magic" is not a known usage/],
    ["refuses a usage listed twice", { usages: ["client auth", "client auth"] }, /usage "client auth" is listed more than once/],
    ["refuses a lifetime below 10 minutes", { expirationSeconds: 599 }, /expirationSeconds must be a whole number of at least 600, got 599/],
    ["refuses a fractional lifetime", { expirationSeconds: 3600.5 }, /got 3600\.5/],
  ] as const)("%s", async (_, o, expected) => {
    const validation = signer().validate(await request(o as RequestOptions));
    if (expected === true) expect(validation).toEqual({ ok: true });
    else expect(validation.ok ? "" : validation.reason).toMatch(expected);
  });

  it("runs the signer's own check after the common ones", async () => {
    const seen: string[] = [];
    const strict = signer({ check: (r) => (seen.push(r.csr.subject.commonName ?? ""), "no, thanks") });
    expect(strict.validate(await request({ usages: [] })).ok).toBe(false);
    expect(seen).toEqual([]);
    expect(strict.validate(await request())).toEqual({ ok: false, reason: "no, thanks" });
    expect(seen).toEqual(["client"]);
  });
});

describe("CaSigner issuance", () => {
  it("presents the leaf alone for a root CA", async () => {
    expect(pemBlocks(await signer().sign(await request(), NOW))).toHaveLength(1);
  });

  it("presents the issuing CA and its chain after the leaf, so clients trusting only the root can verify", async () => {
    const inter = await intermediateCa();
    const chain = await signer({ ca: inter.ca }).sign(await request(), NOW);
    const [leaf = "", ...rest] = pemBlocks(chain);
    expect(rest).toEqual([inter.ca.certPem, inter.root.certPem]);
    writeFileSync(join(dir, "root.pem"), inter.root.certPem);
    writeFileSync(join(dir, "untrusted.pem"), rest.join(""));
    writeFileSync(join(dir, "leaf.pem"), leaf);
    const verify = tryRun("openssl", ["verify", "-attime", String(NOW.getTime() / 1000), "-CAfile", join(dir, "root.pem"), "-untrusted", join(dir, "untrusted.pem"), join(dir, "leaf.pem")]);
    expect(verify).toEqual({ status: 0, out: expect.stringContaining("leaf.pem: OK") });
  });

  it.each([
    ["no lifetime: exactly the one-year default maximum", undefined, undefined, 8760 * HOUR],
    ["a short request: its lifetime plus the backdate", 600, undefined, 900],
    ["a request above the cluster maximum: the maximum", 30 * DAY, 2 * HOUR, 2 * HOUR + 300],
  ])("gives %s", async (_, expirationSeconds, maxDurationSeconds, seconds) => {
    const chain = await signer(maxDurationSeconds ? { maxDurationSeconds } : {}).sign(await request(expirationSeconds ? { expirationSeconds } : {}), NOW);
    const { X509Certificate } = await import("node:crypto");
    const leaf = new X509Certificate(chain);
    expect((Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 1000).toBe(seconds);
  });

  it("refreshes its CA provider, issues from its CA, records the certificate and publishes its anchors", async () => {
    const calls: string[] = [];
    const provider = {
      refresh: async () => calls.push("refresh"),
      current: (): CaKeyPair => (calls.push("current"), ca),
      recordIssued: (issuer: CaKeyPair, notAfter: Date) => calls.push(`recorded ${issuer === ca} ${notAfter.toISOString()}`),
      trustAnchors: (now: Date) => [`anchors at ${now.toISOString()}\n`],
    };
    const s = signer({ ca: provider, check: () => undefined });
    await s.sign(await request({ expirationSeconds: HOUR }), NOW);
    expect(calls).toEqual(["refresh", "current", `recorded true ${new Date(NOW.getTime() + HOUR * 1000).toISOString()}`]);
    expect(s.trustAnchors()).toEqual([`anchors at ${NOW.toISOString()}\n`]);
  });

  it("checks its CA files once per turn of the event loop, shared by that turn's signatures, and again in the next", async () => {
    let checks = 0;
    const provider = { refresh: async () => void checks++, current: (): CaKeyPair => ca };
    const s = signer({ ca: provider });
    const requests = await Promise.all([1, 2, 3, 4].map((i) => request({ cn: `n${i}` })));
    await new Promise((resolve) => setImmediate(resolve));
    // Four signatures of one turn: one look at the files.
    expect(await Promise.all(requests.map((r) => s.sign(r, NOW)))).toHaveLength(4);
    expect(checks).toBe(1);
    // A later turn looks again: a rotation written meanwhile is used.
    await new Promise((resolve) => setImmediate(resolve));
    await s.sign(requests[0]!, NOW);
    expect(checks).toBe(2);
  });

  it("is not ready and says why while a CaSource has no CA loaded", async () => {
    const source = new CaSource({ certFile: join(dir, "absent.crt"), keyFile: join(dir, "absent.key") });
    const s = signer({ ca: source });
    expect([s.ready(), s.trustAnchors()]).toEqual([false, []]);
    const error = await rejection(s.sign(await request(), NOW));
    expect([error.code, error.retryable]).toEqual(["SIGNER_NOT_READY", true]);
    expect(error.message).toMatch(/^signer example\.com\/base cannot sign: no CA loaded from .*absent\.crt .*: cannot read CA files/);
  });

  it("is not ready and does not sign before its CA's NotBefore", async () => {
    const future = await testCa({ ...SIGNERS_CA, commonName: "future CA", madeAt: new Date(NOW.getTime() + DAY * 1000) });
    const s = signer({ ca: future.ca });
    expect(s.ready()).toBe(false);
    const error = await rejection(s.sign(await request(), NOW));
    expect([error.code, error.retryable]).toEqual(["CA_NOT_YET_VALID", true]);
  });

  it("turns an unexpected failure while planning into a retryable INTERNAL error", async () => {
    const s = signer({ plan: () => { throw new TypeError("plan exploded"); } });
    const error = await rejection(s.sign(await request(), NOW));
    expect([error.code, error.retryable, error.message]).toEqual(["INTERNAL", true, "plan exploded"]);
  });

  it("logs each issuance with its serial and no key material", async () => {
    let output = "";
    const destination = new Writable({ write(chunk, _encoding, done) { output += String(chunk); done(); } });
    await signer({ logger: createLogger({ level: "debug", destination }) }).sign(await request(), NOW);
    const line = JSON.parse(output.trim().split("\n").at(-1)!);
    expect(line).toMatchObject({ msg: "issued certificate", signerName: NAME, serial: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(output).not.toMatch(/PRIVATE KEY|CERTIFICATE REQUEST/);
  });
});
