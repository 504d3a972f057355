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
import { mutation } from "./der-mutations.js";

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
