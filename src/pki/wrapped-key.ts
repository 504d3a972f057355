// Private key files wrapped by a key service (`--ca-key-kms`): envelope encryption, a random AES-256-GCM key (DEK)
// encrypts the key's PEM and the service wraps the DEK, so the file alone (a stolen data directory, a backup) holds
// no usable key. The file is a PEM block of its own label, which openssl and every PEM key reader refuse.
// The service is registered once per thread by the command that starts (this layer knows only the interface).
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { PlatformError } from "../errors.js";

export const WRAPPED_KEY_LABEL = "PLATFORM-CA KMS WRAPPED PRIVATE KEY";
const BEGIN = `-----BEGIN ${WRAPPED_KEY_LABEL}-----`;
const END = `-----END ${WRAPPED_KEY_LABEL}-----`;

/** What the key service returns for a wrapped DEK, and needs back to unwrap it (KMS v2's Encrypt response). */
export interface WrappedDek {
  readonly ciphertext: Buffer;
  readonly keyId: string;
  readonly annotations: Readonly<Record<string, Buffer>>;
}

export interface KeyWrapper {
  /** The provider's name, written into the file and named in errors. */
  readonly name: string;
  /** Plain data from which another thread builds the same wrapper (the controllers of `up` run on their own). */
  readonly settings: Readonly<Record<string, unknown>>;
  wrap(dek: Buffer): Promise<WrappedDek>;
  unwrap(wrapped: WrappedDek): Promise<Buffer>;
}

let current: KeyWrapper | undefined;

/** Sets (or clears) the key service of this thread. */
export function useKeyWrapper(wrapper: KeyWrapper | undefined): void {
  current = wrapper;
}

export function keyWrapper(): KeyWrapper | undefined {
  return current;
}

export function isWrappedKey(text: string | Uint8Array): boolean {
  const head = typeof text === "string" ? text.slice(0, 80) : Buffer.from(text.buffer, text.byteOffset, Math.min(80, text.byteLength)).toString("latin1");
  return head.trimStart().startsWith(BEGIN);
}

interface Body {
  readonly v: 1;
  readonly kms: string;
  readonly keyId: string;
  readonly dek: string;
  readonly annotations: Record<string, string>;
  /** nonce(12) ‖ AES-256-GCM(PEM) ‖ tag(16), base64. */
  readonly data: string;
}

/** Additional data: the label and provider, so a file cannot pass for one wrapped by another provider. */
const aad = (kms: string) => Buffer.from(`${WRAPPED_KEY_LABEL}\0${kms}`);

export async function wrapKeyPem(pem: string, wrapper: KeyWrapper): Promise<string> {
  const dek = randomBytes(32);
  const nonce = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", dek, nonce);
  cipher.setAAD(aad(wrapper.name));
  const data = Buffer.concat([nonce, cipher.update(pem, "utf8"), cipher.final(), cipher.getAuthTag()]);
  const w = await wrapper.wrap(dek);
  const body: Body = {
    v: 1,
    kms: wrapper.name,
    keyId: w.keyId,
    dek: w.ciphertext.toString("base64"),
    annotations: Object.fromEntries(Object.entries(w.annotations).map(([k, v]) => [k, v.toString("base64")])),
    data: data.toString("base64"),
  };
  const b64 = Buffer.from(JSON.stringify(body)).toString("base64").replace(/.{1,64}/g, "$&\n");
  return `${BEGIN}\n${b64}${END}\n`;
}

/** The provider a wrapped file names, for messages; undefined when the file is not wrapped or unreadable. */
export function wrappedBy(text: string): string | undefined {
  try {
    return parse(text, "").kms;
  } catch {
    return undefined;
  }
}

function parse(text: string, where: string): Body {
  const inner = text.trim().slice(BEGIN.length, text.trim().length - END.length).replace(/\s+/g, "");
  let body: Body;
  try {
    body = JSON.parse(Buffer.from(inner, "base64").toString("utf8")) as Body;
  } catch (err) {
    throw new PlatformError("KEY_INVALID", `${where}: the wrapped private key is damaged: ${(err as Error).message}`);
  }
  if (body?.v !== 1 || typeof body.kms !== "string" || typeof body.data !== "string" || typeof body.dek !== "string") {
    throw new PlatformError("KEY_INVALID", `${where}: the wrapped private key is damaged or of an unknown version`);
  }
  return body;
}

/** The PEM of a key file's text: unwrapped through the registered service when wrapped, else the text itself. */
export async function unwrapKeyText(text: string, where: string): Promise<string> {
  if (!isWrappedKey(text)) return text;
  const body = parse(text, where);
  const wrapper = current;
  if (!wrapper || wrapper.name !== body.kms) {
    throw new PlatformError("KEY_INVALID", `${where} is wrapped by the KMS provider ${JSON.stringify(body.kms)}: start with --ca-key-kms ${body.kms} and the --encryption-provider-config that defines it`);
  }
  let dek: Buffer;
  try {
    dek = await wrapper.unwrap({ ciphertext: Buffer.from(body.dek, "base64"), keyId: body.keyId, annotations: Object.fromEntries(Object.entries(body.annotations ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64")])) });
  } catch (err) {
    // CA_INVALID, retryable: the plugin may come back, and a CA source tries again at its next refresh.
    throw new PlatformError("CA_INVALID", `cannot unwrap ${where} with the KMS provider ${body.kms}: ${(err as Error).message}`, { retryable: true, cause: err });
  }
  const data = Buffer.from(body.data, "base64");
  try {
    const d = createDecipheriv("aes-256-gcm", dek, data.subarray(0, 12));
    d.setAAD(aad(body.kms));
    d.setAuthTag(data.subarray(data.length - 16));
    return Buffer.concat([d.update(data.subarray(12, data.length - 16)), d.final()]).toString("utf8");
  } catch {
    throw new PlatformError("KEY_INVALID", `${where}: the wrapped private key does not authenticate (damaged, or unwrapped by another key)`);
  }
}
