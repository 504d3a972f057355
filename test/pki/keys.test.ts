import { createPublicKey, sign, verify } from "node:crypto";
import { statSync, writeFileSync, chmodSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  describeKey,
  exportPrivateKeyPem,
  generateKeyPair,
  KEY_TYPES,
  loadPrivateKey,
  privateKeyMatchesCertificate,
  writePrivateKeyFile,
} from "../../src/pki/keys.js";

import { testCa } from "../fixtures/ca.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { run } from "../fixtures/process.js";

const dir = tempDir("keys-");
const openssl = (...args: string[]) => (input?: string) => run("openssl", args, input);

// Keys made by openssl in every PEM form the loader must accept.
const forms: Record<string, string> = {};
beforeAll(() => {
  const rsa = openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048")();
  const ec384 = openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384")();
  Object.assign(forms, {
    "RSA PKCS#8": rsa,
    "RSA PKCS#1": openssl("pkey", "-traditional")(rsa),
    "P-256 SEC1 with EC PARAMETERS": openssl("ecparam", "-name", "prime256v1", "-genkey")(),
    "P-384 PKCS#8": ec384,
    "P-384 SEC1": openssl("pkey", "-traditional")(ec384),
    "P-521 PKCS#8": openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521")(),
    "Ed25519 PKCS#8": openssl("genpkey", "-algorithm", "ed25519")(),
    "encrypted PKCS#8": openssl("pkey", "-aes256", "-passout", "pass:secret")(ec384),
    "legacy encrypted SEC1": openssl("pkey", "-traditional", "-aes256", "-passout", "pass:secret")(ec384),
    "secp256k1": openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp256k1")(),
    "RSA 1024": openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024")(),
    "Ed448": openssl("genpkey", "-algorithm", "ed448")(),
  });
}, 60_000);

describe("loadPrivateKey", () => {
  it.each([
    ["RSA PKCS#8", "rsa", 2048, undefined],
    ["RSA PKCS#1", "rsa", 2048, undefined],
    ["P-256 SEC1 with EC PARAMETERS", "ecdsa", 256, "P-256"],
    ["P-384 PKCS#8", "ecdsa", 384, "P-384"],
    ["P-384 SEC1", "ecdsa", 384, "P-384"],
    ["P-521 PKCS#8", "ecdsa", 521, "P-521"],
    ["Ed25519 PKCS#8", "ed25519", 256, undefined],
  ])("loads a %s key that signs verifiably", (form, algorithm, bits, curve) => {
    const key = loadPrivateKey(forms[form]!);
    expect(describeKey(key)).toEqual({ algorithm, bits, ...(curve && { curve }) });
    const hash = algorithm === "ed25519" ? null : "sha256";
    const sig = sign(hash, Buffer.from("m"), key);
    expect(verify(hash, Buffer.from("m"), createPublicKey(key), sig)).toBe(true);
  });

  it.each([
    ["encrypted PKCS#8", "KEY_INVALID", "encrypted private keys are not supported; decrypt with openssl pkey"],
    ["legacy encrypted SEC1", "KEY_INVALID", "encrypted private keys are not supported; decrypt with openssl pkey"],
    ["secp256k1", "KEY_UNSUPPORTED", "EC curve secp256k1 is not supported"],
    ["RSA 1024", "KEY_TOO_WEAK", "RSA key of 1024 bits"],
    ["Ed448", "KEY_UNSUPPORTED", "key type ed448 is not supported"],
  ])("refuses a %s key with %s", (form, code, message) => {
    expect(() => loadPrivateKey(forms[form]!)).toThrow(expect.objectContaining({ code, message: expect.stringContaining(message) }));
  });

  it.each([
    ["a certificate", async () => (await testCa({ keyType: "p256" })).certPem, "PEM_LABEL"],
    ["two keys", async () => forms["P-384 PKCS#8"]! + forms["Ed25519 PKCS#8"]!, "PEM_INVALID"],
    ["text without PEM", async () => "not a key", "PEM_INVALID"],
    ["a PRIVATE KEY block holding garbage", async () => "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "KEY_INVALID"],
  ])("refuses %s", async (_name, input, code) => {
    const text = await input();
    expect(() => loadPrivateKey(text)).toThrow(expect.objectContaining({ code }));
  });
});

describe("generateKeyPair", () => {
  it.each(KEY_TYPES)("generates a %s key that openssl checks and the loader reads back", async (type) => {
    const pair = await generateKeyPair(type);
    expect(run("openssl", ["pkey", "-check", "-noout"], pair.privateKeyPem)).toMatch(/valid/i);
    const again = loadPrivateKey(pair.privateKeyPem);
    expect(describeKey(again)).toEqual(describeKey(pair.privateKey));
    const expectedBits = { p256: 256, p384: 384, p521: 521, rsa2048: 2048, rsa3072: 3072, rsa4096: 4096, ed25519: 256 }[type];
    expect(describeKey(pair.privateKey).bits).toBe(expectedBits);
    expect(exportPrivateKeyPem(again)).toBe(pair.privateKeyPem);
  }, 30_000);

  it("refuses an unknown key type", async () => {
    await expect(generateKeyPair("p224" as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});

describe("privateKeyMatchesCertificate", () => {
  it("tells the CA's own key from another one", async () => {
    const a = await testCa({ keyType: "p256" });
    const b = await testCa({ keyType: "ed25519" });
    expect(privateKeyMatchesCertificate(a.ca.privateKey, a.certPem)).toBe(true);
    expect(privateKeyMatchesCertificate(a.ca.privateKey, a.ca.certDer)).toBe(true);
    expect(privateKeyMatchesCertificate(b.ca.privateKey, a.certPem)).toBe(false);
  });

  it("refuses bytes that are not a certificate", async () => {
    const { ca } = await testCa({ keyType: "p256" });
    expect(() => privateKeyMatchesCertificate(ca.privateKey, "junk")).toThrow(expect.objectContaining({ code: "CERT_INVALID" }));
  });
});

describe("writePrivateKeyFile", () => {
  it("creates the file readable by its owner only", async () => {
    const path = join(dir, "new.key");
    await writePrivateKeyFile(path, forms["Ed25519 PKCS#8"]!);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).toBe(forms["Ed25519 PKCS#8"]);
  });

  it("narrows the mode of an existing file and replaces its content", async () => {
    const path = join(dir, "old.key");
    writeFileSync(path, "x".repeat(10_000));
    chmodSync(path, 0o644);
    await writePrivateKeyFile(path, forms["P-384 PKCS#8"]!);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, "utf8")).toBe(forms["P-384 PKCS#8"]);
  });

  it("reports a path it cannot write as IO_ERROR", async () => {
    await expect(writePrivateKeyFile(join(dir, "missing", "k.pem"), "x")).rejects.toMatchObject({ code: "IO_ERROR" });
  });
});
