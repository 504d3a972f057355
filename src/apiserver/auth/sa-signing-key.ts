// The ServiceAccount token signing key: an ES256 key pair kept in the data directory, created on first start, reused after.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import { link, readFile, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PlatformError } from "../../errors.js";
import { ioError, readOptional } from "../../pki/files.js";
import { writePrivateKeyFile } from "../../pki/keys.js";
import type { Logger } from "../../logger.js";

export const SA_KEY_FILE = "sa-signing-key.pem";
export const SA_PUBLIC_KEY_FILE = "sa-signing-key.pub";

export interface SigningKey {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** The JWS `kid`: base64url SHA-256 of the public key's DER, as upstream. */
  readonly keyId: string;
  readonly publicKeyPem: string;
}

/** The key in `dir`, or a new one written there (private 0600, public 0644); safe against two processes racing. */
export async function loadOrCreateSigningKey(dir: string, logger: Logger): Promise<SigningKey> {
  const path = join(dir, SA_KEY_FILE);
  let pem = await readOptional(path);
  if (pem === undefined) {
    const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const temp = join(dir, `.${SA_KEY_FILE}.${randomBytes(6).toString("hex")}`);
    await writePrivateKeyFile(temp, privateKey.export({ type: "pkcs8", format: "pem" }) as string);
    try {
      // link() fails when the name exists: whoever linked first wins and everyone reads that key.
      await link(temp, path);
      logger.info({ path }, "created the ServiceAccount token signing key");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw ioError(`cannot create ${path}`, err);
    } finally {
      await unlink(temp).catch(() => undefined);
    }
    pem = (await readOptional(path)) ?? "";
  }
  const key = parseKey(pem, path);
  const publicPath = join(dir, SA_PUBLIC_KEY_FILE);
  if ((await readOptional(publicPath)) !== key.publicKeyPem) {
    await writeFile(publicPath, key.publicKeyPem, { mode: 0o644 }).catch((err: unknown) => {
      throw ioError(`cannot write ${publicPath}`, err);
    });
  }
  return key;
}

/**
 * The key of an existing file (SAController.ServiceAccountKeyFile: the token controller signs token Secrets' tokens
 * with the key the API server checks them with, its data directory's `pki/sa-signing-key.pem`).
 */
export async function readSigningKey(path: string): Promise<SigningKey> {
  const pem = await readOptional(path);
  if (pem === undefined) throw new PlatformError("KEY_INVALID", `${path} does not exist`);
  return parseKey(pem, path);
}

function parseKey(pem: string, path: string): SigningKey {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(pem);
  } catch (err) {
    throw new PlatformError("KEY_INVALID", `${path} is not a PEM private key: ${(err as Error).message}`, { cause: err });
  }
  if (privateKey.asymmetricKeyType !== "ec" || privateKey.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new PlatformError("KEY_UNSUPPORTED", `${path} must hold a P-256 EC key for ES256 tokens (found ${privateKey.asymmetricKeyType})`);
  }
  const publicKey = createPublicKey(privateKey);
  const der = publicKey.export({ type: "spki", format: "der" });
  return {
    privateKey,
    publicKey,
    keyId: createHash("sha256").update(der).digest("base64url"),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }) as string,
  };
}

