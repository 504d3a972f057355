// Stripping subject attributes: multi-valued RDNs shrink, empty RDNs vanish, kept values keep their encoding.
import { describe, expect, it } from "vitest";
import { parseCsr } from "../../src/pki/csr.js";
import { keepSubjectAttributes } from "../../signers/subject-strip.js";
import { csr } from "../fixtures/csr.js";

async function subject(text: string) {
  return parseCsr((await csr({ extraName: text })).pem).subject;
}

describe("subject stripping", () => {
  it.each([
    ["drops one value of a multi-valued RDN", "CN=a+OU=drop, O=keep", ["CN", "O"], "O=keep,CN=a"],
    ["drops an RDN left empty", "CN=a, OU=drop, O=keep", ["CN", "O"], "O=keep,CN=a"],
    ["can leave an empty subject", "OU=drop", ["CN"], ""],
    ["keeps repeated attributes that are permitted", "CN=a, O=x, O=y", ["CN", "O"], "O=y,O=x,CN=a"],
  ])("%s", async (_, text, keep, expected) => {
    const stripped = keepSubjectAttributes(await subject(text), (a) => keep.includes(a.shortName ?? ""));
    expect(stripped.text).toBe(expected);
    expect(stripped.rdns.flat().every((a) => keep.includes(a.shortName ?? ""))).toBe(true);
  });

  it("returns the very same subject when nothing is dropped", async () => {
    const original = await subject("CN=a, O=b");
    expect(keepSubjectAttributes(original, () => true)).toBe(original);
  });

  it("keeps a kept value's bytes, string type included", async () => {
    const original = await subject("CN=a, OU=drop");
    const stripped = keepSubjectAttributes(original, (a) => a.shortName === "CN");
    const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");
    const commonName = /0603550403(0c|13|14|16|1e)0161/.exec(hex(original.der))?.[0];
    expect(commonName).toBeDefined();
    expect(hex(stripped.der)).toContain(commonName);
    expect(stripped.der.length).toBeLessThan(original.der.length);
  });
});
