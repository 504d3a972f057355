// native/csr.c under AddressSanitizer and UBSan: mutated and random requests never read out of bounds, and the C reader
// never reads a request parseCsr (without the signature check, which the C reader leaves to issue.c) refuses.
import { execFileSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { parseCsr } from "../../src/pki/csr.js";
import { csr } from "../fixtures/csr.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { BAD_HAND_CSRS } from "../pki/bad-csrs.js";
import { attribute, extension, handCsr, MS_EXTENSION_REQUEST } from "../pki/csr-builder.js";
import { ctx, int, name, oid, seq, str, tlv, utf8 } from "../pki/der-builder.js";
import { mutation } from "../pki/der-mutations.js";

const root = resolve(import.meta.dirname, "../..");
let driver = "";

beforeAll(() => {
  // node-gyp builds the addon against these headers (nodedir); the reader itself uses only their types.
  const include = join(dirname(process.execPath), "..", "include", "node");
  driver = join(tempDir("csr-reader-"), "csr-driver");
  const flags = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g", "-O1", "-I", include];
  execFileSync("gcc", [...flags, "-o", driver, join(root, "test/native/csr-driver.c"), join(root, "native/csr.c")], { stdio: "pipe" });
}, 60_000);

/** The C reader's verdicts, in order; any sanitizer report makes the driver exit non-zero and this throw. */
function readAll(inputs: readonly Uint8Array[]): boolean[] {
  const parts: Uint8Array[] = [];
  for (const der of inputs) {
    const head = new Uint8Array(4);
    new DataView(head.buffer).setUint32(0, der.length, true);
    parts.push(head, der);
  }
  // The reader allocates nothing (only the driver does), and LeakSanitizer needs to stop the process's threads with
  // ptrace, which some containers forbid: out-of-bounds reads and undefined behaviour are what is checked.
  const out = execFileSync(driver, { input: Buffer.concat(parts), maxBuffer: 1 << 24, env: { ...process.env, ASAN_OPTIONS: "detect_leaks=0" } });
  expect(out.length).toBe(inputs.length);
  return [...out.toString("latin1")].map((c) => c === "1");
}

const jsReads = (der: Uint8Array): boolean => {
  try {
    parseCsr(der, { verify: false, remember: false });
    return true;
  } catch {
    return false;
  }
};

let seeds: Uint8Array[] = [];
beforeAll(async () => {
  const names = name([["2.5.4.3", utf8("é ✓")], ["2.5.4.11", tlv(0x1e, [0, 0x41, 0, 0xe9])]], [["2.5.4.5", str(0x12, "1 2")], ["1.2.3", seq(int(1))]]);
  const sans = seq(tlv(0x82, [0x61]), tlv(0x87, [1, 2, 3, 4]), tlv(0x87, new Uint8Array(16)), tlv(0x81, [0x62]), tlv(0x86, [0x63]), ctx(0, true, oid("1.2.3")), tlv(0x88, [0x2a]));
  seeds = [
    (await csr({ cn: "system:node:a", o: ["system:nodes"], dns: ["a.example"], ip: ["10.0.0.1", "2001:db8::1"], email: ["a@b.c"], uri: ["spiffe://x/y"] })).der,
    (await csr({ cn: "rsa", ou: ["u"], key: "rsa2048", requestCa: true })).der,
    (await csr({ key: "p384" })).der,
    (await csr({ key: "p521", dns: ["x"] })).der,
    handCsr({ subject: names, extensions: [extension("2.5.29.17", sans), extension("1.2.3.4", seq(), false)] }),
    handCsr({ attributes: [attribute("1.2.840.113549.1.9.7", utf8("pw"))], extensions: [extension("1.2.3.4", seq(), true)], extensionRequestOid: MS_EXTENSION_REQUEST }),
    handCsr({ omitAttributes: true }),
  ];
});

describe("native CSR reader", () => {
  it("reads every seed parseCsr reads, and none of the hand-made requests parseCsr refuses", () => {
    expect(readAll(seeds)).toEqual(seeds.map(() => true));
    const bad = BAD_HAND_CSRS.map(([, options]) => handCsr(options));
    expect(readAll(bad)).toEqual(bad.map(() => false));
  });

  it("stays in bounds on 30,000 mutated requests and reads only those parseCsr reads", () => {
    const inputs = fc
      .sample(fc.tuple(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 4 })), { numRuns: 30_000, seed: 20261125 })
      .map(([pick, mutations]) => mutations.reduce((d, m) => (d.length === 0 ? d : m(d)), seeds[pick % seeds.length]!));
    const verdicts = readAll(inputs);
    const wrongly = inputs.filter((der, i) => verdicts[i] && !jsReads(der));
    expect(wrongly.map((d) => Buffer.from(d).toString("hex"))).toEqual([]);
    // Many mutations keep a request readable (a changed name or key octet): the comparison is not vacuous.
    expect(verdicts.filter(Boolean).length).toBeGreaterThan(1_000);
  });

  it("stays in bounds on random bytes, truncations and every prefix of a request", () => {
    const random = fc.sample(fc.uint8Array({ maxLength: 400 }).map((b) => Uint8Array.from([0x30, ...b])), { numRuns: 5_000, seed: 7 });
    const prefixes = seeds.flatMap((s) => Array.from({ length: s.length }, (_, n) => s.subarray(0, n)));
    const inputs = [...random, ...prefixes, new Uint8Array(0)];
    const verdicts = readAll(inputs);
    expect(inputs.filter((der, i) => verdicts[i] && !jsReads(der))).toEqual([]);
    expect(verdicts.filter(Boolean)).toEqual([]);
  });
});
