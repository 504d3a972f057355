// PEM decoding and encoding: strict blocks, tolerated explanatory text, headers, labels and size limits.
import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPlatformError, type ErrorCode } from "../../src/errors.js";
import { decodePem, decodeSinglePem, encodePem } from "../../src/pki/pem.js";

const bytes = (n: number, seed = 1): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

function block(label: string, der: Uint8Array, opts: { endLabel?: string; headers?: string; crlf?: boolean } = {}): string {
  let text = encodePem(label, der);
  if (opts.endLabel !== undefined) text = text.replace(`-----END ${label}-----`, `-----END ${opts.endLabel}-----`);
  if (opts.headers !== undefined) text = text.replace(`-----\n`, `-----\n${opts.headers}\n\n`);
  return opts.crlf ? text.replace(/\n/g, "\r\n") : text;
}

function codeOf(fn: () => unknown): ErrorCode | "none" | "untyped" {
  try {
    fn();
    return "none";
  } catch (err) {
    return isPlatformError(err) ? err.code : "untyped";
  }
}

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  return "";
}

describe("encodePem", () => {
  it.each([0, 1, 47, 48, 49, 96, 1000])("writes %i bytes as 64-column lines that decode back", (n) => {
    const der = bytes(n);
    if (n === 0) {
      expect(codeOf(() => decodePem(encodePem("X", der)))).toBe("PEM_INVALID");
      return;
    }
    const text = encodePem("CERTIFICATE", der);
    expect(text.endsWith("-----END CERTIFICATE-----\n")).toBe(true);
    for (const line of text.split("\n").slice(1, -2)) expect(line.length).toBeLessThanOrEqual(64);
    expect(decodePem(text)[0]!.der).toEqual(der);
  });

  it("writes PEM that openssl reads", () => {
    const der = execFileSync("openssl", ["genpkey", "-algorithm", "ed25519", "-outform", "DER"]);
    const pem = encodePem("PRIVATE KEY", new Uint8Array(der));
    const out = execFileSync("openssl", ["pkey", "-noout", "-text"], { input: pem }).toString();
    expect(out).toContain("ED25519 Private-Key");
  });

  it("refuses a label RFC 7468 does not allow", () => {
    expect(codeOf(() => encodePem("BAD--LABEL", bytes(3)))).toBe("INVALID_ARGUMENT");
  });
});

describe("decodePem", () => {
  it("decodes several blocks with text before, between and after them", () => {
    const text = `leading note\n${block("CERTIFICATE", bytes(10, 1))}between\n\n${block("CERTIFICATE", bytes(20, 2), { crlf: true })}trailing`;
    const blocks = decodePem(text);
    expect(blocks.map((b) => [b.index, b.label, b.der.length, b.hasHeaders])).toEqual([
      [0, "CERTIFICATE", 10, false],
      [1, "CERTIFICATE", 20, false],
    ]);
    expect(blocks[1]!.der).toEqual(bytes(20, 2));
  });

  it("tolerates whitespace inside the base64 text", () => {
    const text = "-----BEGIN X-----\n  AAEC\tAwQF \n\n BgcI\n-----END X-----";
    expect(Array.from(decodePem(text)[0]!.der)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("accepts base64 whose pad bits are not zero, as the pattern allows (it does not encode back to itself)", () => {
    // "AB==": one byte, 0x00, with the last four bits of B set.
    expect(Array.from(decodePem("-----BEGIN X-----\nAAECAB==\n-----END X-----\n")[0]!.der)).toEqual([0, 1, 2, 0]);
  });

  it("accepts exactly the base64 text the pattern accepts, and decodes it as node does", () => {
    const pattern = /^[A-Za-z0-9+/]*={0,2}$/;
    const char = fc.constantFrom(..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_*.%".split(""));
    fc.assert(
      fc.property(fc.array(char, { minLength: 1, maxLength: 40 }), (chars) => {
        const body = chars.join("");
        const valid = body.length % 4 === 0 && pattern.test(body);
        const code = codeOf(() => decodePem(`-----BEGIN X-----\n${body}\n-----END X-----\n`));
        expect(code).toBe(valid ? "none" : "PEM_INVALID");
        if (valid) expect(Buffer.from(decodePem(`-----BEGIN X-----\n${body}\n-----END X-----\n`)[0]!.der)).toEqual(Buffer.from(body, "base64"));
      }),
      { numRuns: 2000 },
    );
  });

  it("reports RFC 1421 headers", () => {
    const text = block("RSA PRIVATE KEY", bytes(30), { headers: "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00FF\n  continued" });
    const [b] = decodePem(text);
    expect(b!.hasHeaders).toBe(true);
    expect(b!.der).toEqual(bytes(30));
  });

  it("reads openssl's encrypted key with headers", () => {
    const pem = execFileSync("openssl", ["genrsa", "-traditional", "-aes128", "-passout", "pass:x", "1024"], { stdio: ["ignore", "pipe", "ignore"] }).toString();
    const [b] = decodePem(pem);
    expect(b!.label).toBe("RSA PRIVATE KEY");
    expect(b!.hasHeaders).toBe(true);
  });

  it.each<[string, string, ErrorCode, string]>([
    ["no block at all", "just some text\n", "PEM_INVALID", "no PEM block"],
    ["empty input", "", "PEM_INVALID", "no PEM block"],
    ["an unterminated block", "-----BEGIN X-----\nAAEC\n", "PEM_INVALID", "not terminated"],
    ["a block cut by the next BEGIN", "-----BEGIN X-----\nAAEC\n" + encodePem("Y", bytes(3)), "PEM_INVALID", "not terminated"],
    ["mismatched END label", block("CERTIFICATE", bytes(5), { endLabel: "CERTIFICATE REQUEST" }), "PEM_LABEL", "does not match"],
    ["bad base64 characters", "-----BEGIN X-----\nAA*C\n-----END X-----\n", "PEM_INVALID", "not valid base64"],
    ["base64 without padding", "-----BEGIN X-----\nAAE\n-----END X-----\n", "PEM_INVALID", "not valid base64"],
    ["padding in the middle", "-----BEGIN X-----\nAA==AAAA\n-----END X-----\n", "PEM_INVALID", "not valid base64"],
    ["an empty block", "-----BEGIN X-----\n-----END X-----\n", "PEM_INVALID", "no base64 content"],
    ["an END line without BEGIN", "-----END X-----\n" + encodePem("X", bytes(3)), "PEM_INVALID", "has no BEGIN"],
    ["a trailing END line without BEGIN", encodePem("X", bytes(3)) + "-----END X-----\n", "PEM_INVALID", "has no BEGIN"],
    ["an unclosed BEGIN line", "-----BEGIN X\nAAEC\n-----END X-----\n", "PEM_INVALID", "not closed"],
    ["text after the BEGIN line", "-----BEGIN X----- junk\nAAEC\n-----END X-----\n", "PEM_INVALID", "same line"],
    ["a label with a double space", "-----BEGIN A  B-----\nAAEC\n-----END A  B-----\n", "PEM_INVALID", "RFC 7468"],
    ["headers without a blank line", "-----BEGIN X-----\nProc-Type: 4\nAAEC\n-----END X-----\n", "PEM_INVALID", "blank line"],
  ])("refuses %s", (_name, text, code, fragment) => {
    expect(codeOf(() => decodePem(text))).toBe(code);
    expect(messageOf(() => decodePem(text))).toContain(fragment);
  });

  it("names the block index and label in messages", () => {
    const text = encodePem("CERTIFICATE", bytes(4)) + "-----BEGIN CERTIFICATE-----\n%%%%\n-----END CERTIFICATE-----\n";
    expect(messageOf(() => decodePem(text))).toBe('block 2 (label "CERTIFICATE"): content is not valid base64');
  });

  it("enforces a required label on every block", () => {
    const text = encodePem("CERTIFICATE", bytes(4)) + encodePem("PRIVATE KEY", bytes(4));
    expect(decodePem(encodePem("CERTIFICATE", bytes(4)).repeat(2), { label: "CERTIFICATE" }).length).toBe(2);
    expect(codeOf(() => decodePem(text, { label: "CERTIFICATE" }))).toBe("PEM_LABEL");
    expect(messageOf(() => decodePem(text, { label: "CERTIFICATE" }))).toBe('block 2 (label "PRIVATE KEY"): expected label "CERTIFICATE"');
  });

  it.each([
    [100, 99, "INPUT_TOO_LARGE"],
    [100, 100, "none"],
  ] as const)("refuses input of %i characters when the limit is %i", (size, limit, code) => {
    const pem = encodePem("X", bytes(3));
    const text = pem + " ".repeat(size - pem.length);
    expect(codeOf(() => decodePem(text, { maxBytes: limit }))).toBe(code);
  });

  it.each([0, -1, 1.5, "10"])("refuses a maxBytes option of %j", (maxBytes) => {
    expect(messageOf(() => decodePem("x", { maxBytes: maxBytes as number }))).toBe(
      `expected \`maxBytes\` to be a positive integer, got ${JSON.stringify(maxBytes)}`,
    );
  });
});

describe("decodeSinglePem", () => {
  const csr = encodePem("CERTIFICATE REQUEST", bytes(8));

  it("returns the one block with the wanted label", () => {
    expect(decodeSinglePem(`note\n${csr}`, "CERTIFICATE REQUEST").der).toEqual(bytes(8));
  });

  it("accepts any of several labels", () => {
    const legacy = encodePem("NEW CERTIFICATE REQUEST", bytes(8));
    expect(decodeSinglePem(legacy, ["CERTIFICATE REQUEST", "NEW CERTIFICATE REQUEST"]).label).toBe("NEW CERTIFICATE REQUEST");
  });

  it.each<[string, string, ErrorCode]>([
    ["a wrong label", encodePem("CERTIFICATE", bytes(8)), "PEM_LABEL"],
    ["two blocks", csr + csr, "PEM_INVALID"],
    ["headers", block("CERTIFICATE REQUEST", bytes(8), { headers: "Comment: hello" }), "PEM_HEADERS"],
  ])("refuses %s", (_name, text, code) => {
    expect(codeOf(() => decodeSinglePem(text, "CERTIFICATE REQUEST"))).toBe(code);
  });
});
