// Wrapped private key files: the envelope round trip, a file bound to its provider, damage detected, and the errors
// that name what to do (no wrapper, another provider, a service that does not answer).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { generateKeyPair } from "../../src/pki/keys.js";
import { isWrappedKey, unwrapKeyText, useKeyWrapper, wrapKeyPem, type KeyWrapper } from "../../src/pki/wrapped-key.js";
import { isPlatformError } from "../../src/errors.js";

/** A key service in memory: AES-GCM under a fixed key, key ID "k1". */
function memoryWrapper(name: string, down = false): KeyWrapper {
  const kek = createHash("sha256").update(name).digest();
  return {
    name,
    settings: { name },
    async wrap(dek) {
      const nonce = randomBytes(12);
      const c = createCipheriv("aes-256-gcm", kek, nonce);
      return { ciphertext: Buffer.concat([nonce, c.update(dek), c.final(), c.getAuthTag()]), keyId: "k1", annotations: { "memory.example": Buffer.from("1") } };
    },
    async unwrap(w) {
      if (down) throw new Error("the service does not answer");
      expect(w.annotations["memory.example"]?.toString()).toBe("1");
      const d = createDecipheriv("aes-256-gcm", kek, w.ciphertext.subarray(0, 12));
      d.setAuthTag(w.ciphertext.subarray(w.ciphertext.length - 16));
      return Buffer.concat([d.update(w.ciphertext.subarray(12, w.ciphertext.length - 16)), d.final()]);
    },
  };
}

afterEach(() => useKeyWrapper(undefined));

describe("wrapped key files", () => {
  it("wrap and unwrap give the PEM back; the file holds none of it; plain PEM passes through", async () => {
    const { privateKeyPem } = await generateKeyPair("p256");
    const wrapper = memoryWrapper("kms1");
    const wrapped = await wrapKeyPem(privateKeyPem, wrapper);
    expect(isWrappedKey(wrapped)).toBe(true);
    expect(isWrappedKey(privateKeyPem)).toBe(false);
    expect(wrapped).not.toContain(privateKeyPem.split("\n")[1]!);
    useKeyWrapper(wrapper);
    expect(await unwrapKeyText(wrapped, "ca.key")).toBe(privateKeyPem);
    expect(await unwrapKeyText(privateKeyPem, "ca.key")).toBe(privateKeyPem);
  });

  it("says which flag a wrapped file needs, refuses another provider's file, and names a service that does not answer", async () => {
    const { privateKeyPem } = await generateKeyPair("p256");
    const wrapped = await wrapKeyPem(privateKeyPem, memoryWrapper("kms1"));
    await expect(unwrapKeyText(wrapped, "ca.key")).rejects.toThrow('ca.key is wrapped by the KMS provider "kms1": start with --ca-key-kms kms1 and the --encryption-provider-config that defines it');
    useKeyWrapper(memoryWrapper("kms2"));
    await expect(unwrapKeyText(wrapped, "ca.key")).rejects.toThrow(/wrapped by the KMS provider "kms1"/);
    useKeyWrapper(memoryWrapper("kms1", true));
    const err = await unwrapKeyText(wrapped, "ca.key").catch((e: unknown) => e);
    expect(isPlatformError(err, "CA_INVALID")).toBe(true);
    expect((err as Error).message).toBe("cannot unwrap ca.key with the KMS provider kms1: the service does not answer");
  });

  it("detects a damaged body", async () => {
    const { privateKeyPem } = await generateKeyPair("p256");
    const wrapper = memoryWrapper("kms1");
    const wrapped = await wrapKeyPem(privateKeyPem, wrapper);
    useKeyWrapper(wrapper);
    const lines = wrapped.split("\n");
    const body = JSON.parse(Buffer.from(lines.slice(1, -2).join(""), "base64").toString()) as { data: string };
    const data = Buffer.from(body.data, "base64");
    data[20] = data[20]! ^ 1;
    const tampered = wrapped.replace(lines.slice(1, -2).join("\n"), Buffer.from(JSON.stringify({ ...body, data: data.toString("base64") })).toString("base64"));
    await expect(unwrapKeyText(tampered, "ca.key")).rejects.toThrow("ca.key: the wrapped private key does not authenticate (damaged, or unwrapped by another key)");
    await expect(unwrapKeyText(`${lines[0]}\nnot base64 json\n${lines.at(-2)}\n`, "ca.key")).rejects.toThrow(/^ca\.key: the wrapped private key is damaged/);
  });
});
