// Property tests: mutated CSRs and PEM texts only ever produce a PlatformError, never a crash or a false accept.
import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { PlatformError } from "../../src/errors.js";
import { CSR_MAX_BYTES, parseCsr } from "../../src/pki/csr.js";
import { decodePem, encodePem } from "../../src/pki/pem.js";
import { csr } from "../fixtures/csr.js";
import { extension, handCsr, MS_EXTENSION_REQUEST } from "./csr-builder.js";
import { seq, tlv } from "./der-builder.js";

let seeds: Uint8Array[] = [];

beforeAll(async () => {
  const fixtures = await Promise.all([
    csr({ cn: "system:node:a", o: ["system:nodes"], dns: ["a.example"], ip: ["10.0.0.1", "2001:db8::1"], email: ["a@b.c"], uri: ["spiffe://x/y"] }),
    csr({ cn: "rsa", ou: ["u"], key: "rsa2048", requestCa: true }),
    csr({ cn: "ed", key: "ed25519", dns: ["ed.example"] }),
    csr({ key: "p384" }),
  ]);
  const pss = execFileSync(
    "openssl",
    ["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", "/dev/null", "-subj", "/O=x/CN=pss", "-sigopt", "rsa_padding_mode:pss", "-outform", "DER"],
    { stdio: ["ignore", "pipe", "ignore"] },
  );
  seeds = [
    ...fixtures.map((f) => f.der),
    new Uint8Array(pss),
    handCsr({ omitAttributes: true }),
    handCsr({ extensions: [extension("2.5.29.17", seq(tlv(0x82, [0x61])), true)], extensionRequestOid: MS_EXTENSION_REQUEST }),
  ];
});

/** Offsets of every TLV header in a DER tree, so that length mutations hit real length bytes. */
function headerOffsets(der: Uint8Array): number[] {
  const out: number[] = [];
  const walk = (start: number, end: number): void => {
    let p = start;
    while (p + 1 < end) {
      out.push(p);
      const first = der[p + 1]!;
      const n = first < 0x80 ? 0 : first & 0x7f;
      let len = first < 0x80 ? first : 0;
      for (let i = 0; i < n; i++) len = len * 256 + der[p + 2 + i]!;
      const body = p + 2 + n;
      if ((der[p]! & 0x20) !== 0 || der[p] === 0x03 || der[p] === 0x04) walk(der[p] === 0x03 ? body + 1 : body, Math.min(body + len, end));
      p = body + len;
    }
  };
  walk(0, der.length);
  return out;
}

type Mutation = (der: Uint8Array) => Uint8Array;

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }).map(({ at, bit }) => (d: Uint8Array) => {
    const out = d.slice();
    out[at % out.length]! ^= 1 << bit;
    return out;
  }),
  fc.nat().map((n) => (d: Uint8Array) => d.slice(0, n % d.length)),
  fc.record({ at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }).map(({ at, bytes }) => (d: Uint8Array) => {
    const i = at % (d.length + 1);
    return Uint8Array.from([...d.subarray(0, i), ...bytes, ...d.subarray(i)]);
  }),
  fc.record({ at: fc.nat(), count: fc.integer({ min: 1, max: 16 }) }).map(({ at, count }) => (d: Uint8Array) => {
    const i = at % d.length;
    return Uint8Array.from([...d.subarray(0, i), ...d.subarray(i + count)]);
  }),
  fc.record({ pick: fc.nat(), value: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x80, 0x81, 0x82, 0x84, 0x85, 0xff)), delta: fc.constantFrom(-1, 1, 0) }).map(
    ({ pick, value, delta }) =>
      (d: Uint8Array) => {
        const headers = headerOffsets(d);
        const at = headers[pick % headers.length]! + 1;
        const out = d.slice();
        out[at] = delta === 0 ? value : (out[at]! + delta) & 0xff;
        return out;
      },
  ),
  fc.record({ at: fc.nat(), tag: fc.integer({ min: 0, max: 255 }) }).map(({ at, tag }) => (d: Uint8Array) => {
    const headers = headerOffsets(d);
    const out = d.slice();
    out[headers[at % headers.length]!] = tag;
    return out;
  }),
  fc.record({ at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }) }).map(({ at, bytes }) => (d: Uint8Array) => {
    const out = d.slice();
    out.set(bytes.subarray(0, Math.max(0, out.length - (at % out.length))), at % out.length);
    return out;
  }),
);

function expectOnlyPlatformErrors(input: string | Uint8Array, changed: boolean): void {
  let parsed;
  try {
    parsed = parseCsr(input);
  } catch (err) {
    if (err instanceof PlatformError) return;
    throw new Error(`parseCsr crashed with ${String(err)}`, { cause: err });
  }
  if (changed) throw new Error(`a mutated CSR was accepted (${parsed.subject.text})`);
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

describe("parseCsr under mutation", () => {
  it("parses every unmutated seed, as DER and as PEM", () => {
    for (const der of seeds) {
      expect(parseCsr(der).der).toEqual(der);
      expect(parseCsr(encodePem("CERTIFICATE REQUEST", der)).der).toEqual(der);
    }
  });

  it("only ever throws PlatformError for 10,000 mutated requests, and accepts none of them", () => {
    fc.assert(
      fc.property(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.boolean(), (pick, mutations, asPem) => {
        const seed = seeds[pick % seeds.length]!;
        const der = mutations.reduce((d, m) => (d.length === 0 ? d : m(d)), seed);
        expectOnlyPlatformErrors(asPem ? encodePem("CERTIFICATE REQUEST", der) : der, !sameBytes(der, seed));
      }),
      { numRuns: 10_000 },
    );
  });

  it("only ever throws PlatformError for random bytes and random text", () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 600 }), fc.string({ maxLength: 600 }), fc.uint8Array({ maxLength: 600 }).map((b) => Uint8Array.from([0x30, ...b]))), (input) => {
        expectOnlyPlatformErrors(input, true);
      }),
      { numRuns: 2_000 },
    );
  });

  it("refuses oversized inputs of every form before reading them", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4096 }), fc.constantFrom("pem", "der", "pem-bytes"), (extra, form) => {
        const der = seeds[0]!;
        const pem = encodePem("CERTIFICATE REQUEST", der) + " ".repeat(CSR_MAX_BYTES);
        const input =
          form === "pem" ? pem + "x".repeat(extra) : form === "der" ? Uint8Array.from([...der, ...new Uint8Array(CSR_MAX_BYTES + extra - der.length)]) : new TextEncoder().encode(pem);
        expect(() => parseCsr(input)).toThrow(expect.objectContaining({ code: "INPUT_TOO_LARGE" }) as Error);
      }),
      { numRuns: 30 },
    );
  });
});

describe("decodePem under mutation", () => {
  const text = (): string => seeds.map((d, i) => `note ${i}\n${encodePem(i % 2 ? "CERTIFICATE" : "CERTIFICATE REQUEST", d)}`).join("");

  it("decodes the unmutated text", () => {
    expect(decodePem(text()).map((b) => b.der)).toEqual(seeds);
  });

  const textMutation = fc.oneof(
    fc.record({ at: fc.nat(), ch: fc.constantFrom("-", "\n", "\r", " ", ":", "=", "A", "*", "é", "\0") }).map(({ at, ch }) => (t: string) => {
      const i = at % t.length;
      return t.slice(0, i) + ch + t.slice(i + 1);
    }),
    fc.record({ at: fc.nat(), count: fc.integer({ min: 1, max: 80 }) }).map(({ at, count }) => (t: string) => t.slice(0, at % t.length) + t.slice((at % t.length) + count)),
    fc.record({ at: fc.nat(), insert: fc.constantFrom("-----BEGIN X-----\n", "-----END X-----\n", "Proc-Type: 4\n\n", "-----", "==", "\n\n") }).map(
      ({ at, insert }) =>
        (t: string) => {
          const i = at % t.length;
          return t.slice(0, i) + insert + t.slice(i);
        },
    ),
    fc.nat().map((n) => (t: string) => t.slice(0, n % t.length)),
  );

  it("only ever throws PlatformError for 3,000 mutated PEM texts", () => {
    const original = text();
    fc.assert(
      fc.property(fc.array(textMutation, { minLength: 1, maxLength: 4 }), fc.boolean(), (mutations, require) => {
        const mutated = mutations.reduce((t, m) => (t.length === 0 ? t : m(t)), original);
        try {
          const blocks = decodePem(mutated, require ? { label: "CERTIFICATE", maxBytes: 1 << 20 } : {});
          expect(blocks.length).toBeGreaterThan(0);
        } catch (err) {
          if (!(err instanceof PlatformError)) throw new Error(`decodePem crashed with ${String(err)}`, { cause: err });
        }
      }),
      { numRuns: 3_000 },
    );
  });
});
