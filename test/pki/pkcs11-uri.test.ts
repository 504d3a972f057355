// RFC 7512 key URIs: attribute placement, percent-decoding, PIN sources, and a fuzzed round trip.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPlatformError } from "../../src/errors.js";
import { maskPin, parsePkcs11Uri, readPin, resolveKeyRef } from "../../src/pki/pkcs11-uri.js";
import { tempDir } from "../fixtures/temp-dir.js";

const error = (uri: string): string => {
  try {
    parsePkcs11Uri(uri);
  } catch (err) {
    if (isPlatformError(err) && err.code === "HSM_URI_INVALID") return err.message;
    throw err;
  }
  throw new Error(`${uri} was accepted`);
};

describe("parsePkcs11Uri", () => {
  it("reads path attributes before ? and query attributes after it, percent-decoded", () => {
    const ref = parsePkcs11Uri("pkcs11:token=My%20CA;object=signer%3Bkey;id=%01%ff;type=private?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/etc/pin");
    expect(ref).toEqual({
      display: "pkcs11:token=My%20CA;object=signer%3Bkey;id=%01%ff;type=private?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/etc/pin",
      token: "My CA",
      object: "signer;key",
      id: Uint8Array.of(1, 255),
      type: "private",
      modulePath: "/usr/lib/softhsm/libsofthsm2.so",
      pinSource: "file:/etc/pin",
    });
  });

  it("accepts and ignores vendor attributes (x-...)", () => {
    expect(parsePkcs11Uri("pkcs11:object=k;x-vendor=1?x-opt=a%20b").object).toBe("k");
  });

  it("masks pin-value wherever the URI is shown", () => {
    const ref = parsePkcs11Uri("pkcs11:object=k?pin-value=secret&module-path=/m.so");
    expect([ref.pinValue, ref.display]).toEqual(["secret", "pkcs11:object=k?pin-value=***&module-path=/m.so"]);
    expect(error("pkcs11:object=k;bogus=1?pin-value=secret")).not.toContain("secret");
    expect(maskPin("pkcs11:object=a;pin-value=x")).toBe("pkcs11:object=a;pin-value=***");
  });

  it.each([
    ["http://x", /must start with "pkcs11:"/],
    ["pkcs11:token=a", /object= \(label\) or id=/],
    ["pkcs11:object=a;object=b", /object is given twice/],
    ["pkcs11:object=a%2", /bad percent-escape "%2"/],
    ["pkcs11:object=a%g1", /bad percent-escape "%g1"/],
    ["pkcs11:object=%ff%fe", /not UTF-8/],
    ["pkcs11:object=a b", /must be percent-encoded/],
    ["pkcs11:object=a;module-path=/m.so", /module-path belongs in the query \(after \?\)/],
    ["pkcs11:object=a?token=x", /token belongs in the path \(before \?\)/],
    ["pkcs11:object=a;colour=red", /unknown path attribute colour/],
    ["pkcs11:object=a;;id=%01", /empty attribute in the path/],
    ["pkcs11:object", /is not name=value/],
    ["pkcs11:object=a;type=cert", /type=cert cannot sign/],
    ["pkcs11:object=a;type=blob", /type must be one of/],
    ["pkcs11:object=a;slot-id=x1", /slot-id must be a decimal number/],
    ["pkcs11:object=a?pin-value=1&pin-source=file:/p", /pin-value or pin-source, not both/],
    ["pkcs11:object=a?pin-source=https://pins", /pin-source must be file:\/path or env:NAME/],
    ["pkcs11:object=a?x=1?y=2", /characters that must be percent-encoded|unknown query attribute/],
  ])("refuses %s", (uri, message) => {
    expect(error(uri)).toMatch(message);
  });

  it("reads the PIN from pin-value, a file, or an environment variable", () => {
    const dir = tempDir("pkcs11-pin-");
    const file = join(dir, "pin");
    writeFileSync(file, "1234\n");
    expect(readPin(parsePkcs11Uri(`pkcs11:object=a?pin-source=file:${file}`))).toBe("1234");
    expect(readPin(parsePkcs11Uri(`pkcs11:object=a?pin-source=file://${file}`))).toBe("1234");
    expect(readPin(parsePkcs11Uri("pkcs11:object=a?pin-source=env:CA_PIN"), { CA_PIN: "9876" })).toBe("9876");
    expect(readPin(parsePkcs11Uri("pkcs11:object=a?pin-value=55"))).toBe("55");
    expect(readPin(parsePkcs11Uri("pkcs11:object=a"))).toBeUndefined();
    expect(() => readPin(parsePkcs11Uri("pkcs11:object=a?pin-source=env:CA_PIN"), {})).toThrow(/environment variable CA_PIN \(pin-source\) is not set/);
    expect(() => readPin(parsePkcs11Uri(`pkcs11:object=a?pin-source=file:${dir}/none`))).toThrow(/cannot read the PIN file/);
  });

  it("keeps pkcs11: URIs as written where file paths are resolved", () => {
    expect(resolveKeyRef("/etc/ca", "ca.key")).toBe("/etc/ca/ca.key");
    expect(resolveKeyRef("/etc/ca", "pkcs11:object=a")).toBe("pkcs11:object=a");
    expect(resolveKeyRef("/etc/ca", "PKCS11:object=a")).toBe("PKCS11:object=a");
  });

  it("decodes any percent-encoded label and id back to what was encoded (fuzzed)", () => {
    const encodeBytes = (bytes: Uint8Array) => [...bytes].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }), fc.uint8Array({ minLength: 1, maxLength: 20 }), fc.string({ maxLength: 20 }), (label, id, token) => {
        const uri = `pkcs11:token=${encodeURIComponent(token)};object=${encodeURIComponent(label)};id=${encodeBytes(id)}?module-path=${encodeURIComponent("/opt/lib/p11 module.so")}`;
        const ref = parsePkcs11Uri(uri);
        expect([ref.object, Buffer.from(ref.id!).toString("hex"), ref.token ?? "", ref.modulePath]).toEqual([label, Buffer.from(id).toString("hex"), token, "/opt/lib/p11 module.so"]);
      }),
    );
  });

  it("answers any input with a parsed key or HSM_URI_INVALID, never another error (fuzzed)", () => {
    const piece = fc.oneof(fc.constantFrom("pkcs11:", ";", "?", "&", "=", "%", "%2", "%zz", "object", "id", "token", "pin-value", "module-path", "type=private", "%C3%A9", "%ff"), fc.string({ maxLength: 6 }));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const uri = `pkcs11:${pieces.join("")}`;
        try {
          const ref = parsePkcs11Uri(uri);
          expect(ref.object !== undefined || ref.id !== undefined).toBe(true);
        } catch (err) {
          expect(isPlatformError(err) && err.code === "HSM_URI_INVALID" && !err.message.includes("\n")).toBe(true);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
