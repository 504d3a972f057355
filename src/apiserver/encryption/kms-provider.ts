// The KMS v2 provider, in upstream's scheme: one random 32-byte seed per key ID, wrapped by the plugin (one Encrypt
// call), and every write derives its own AES-256-GCM key from it, HKDF-SHA256(seed, 32 random bytes stored with the
// value). Stored as `k8s:enc:kms:v2:<name>:` + EncryptedObject. Unwrapped seeds are cached, so values whose seed was
// seen keep reading while the plugin is down; writes go on with the current seed for at most 3 minutes after the
// plugin last answered, then fail, so a key ID change is always picked up before a migration relies on it.
import { createHash, createHmac, randomBytes, randomUUID } from "node:crypto";
import { LRUCache } from "lru-cache";
import { PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { systemClock, type CancelTimer, type Clock } from "../../time/clock.js";
import { KmsClient } from "./kms-client.js";
import { AES_GCM_KEY, HKDF_SHA256_XNONCE_AES_GCM_SEED, decodeObject, encodeObjectTail, encodeWithTail, type EncryptedObject } from "./kms-wire.js";
import { ENCRYPTED_PREFIX, gcmOpen, gcmSeal, type Transformer } from "./providers.js";
import { keyIdHash, kmsMetrics } from "./kms-metrics.js";

/** Upstream's intervals (encryptionconfig/config.go): status poll when healthy / failing, and how long writes coast. */
export const KMS_POLL_HEALTHY_MS = 60_000;
export const KMS_POLL_FAILING_MS = 10_000;
export const KMS_WRITE_TTL_MS = 3 * 60_000;
/** A health check reuses the last answer this long (upstream: 20 s healthy, 3 s failing). */
const CHECK_TTL_OK_MS = 20_000;
const CHECK_TTL_FAILED_MS = 3_000;
const SEED_BYTES = 32;
const INFO_BYTES = 32;
const MAX_KEY_ID = 1024;
const MAX_DEK_SOURCE = 1024;
const MAX_ANNOTATIONS = 32 * 1024;

export interface KmsSettings {
  /** `kms.name`: part of the stored prefix. */
  readonly name: string;
  /** `unix:///path/to/socket`. */
  readonly endpoint: string;
  readonly timeoutMs: number;
}

interface WriteState {
  readonly keyId: string;
  readonly seed: Buffer;
  /** The EncryptedObject fields after encryptedData, encoded once per seed. */
  readonly tail: Buffer;
  expiresAt: number;
}


/** HKDF-Expand(SHA-256, seed, info) for one 32-byte block (upstream expands only: the seed is already uniform). */
function deriveKey(seed: Buffer, info: Uint8Array): Buffer {
  return createHmac("sha256", seed).update(info).update(Buffer.of(1)).digest();
}

function checkObject(o: EncryptedObject): void {
  if (o.encryptedDEKSourceType !== AES_GCM_KEY && o.encryptedDEKSourceType !== HKDF_SHA256_XNONCE_AES_GCM_SEED) throw new Error(`unknown encryptedDEKSourceType: ${o.encryptedDEKSourceType}`);
  if (o.encryptedData.length === 0) throw new Error("encrypted data is empty");
  checkWrapped(o.encryptedDEKSource, o.keyID, o.annotations);
}

function checkWrapped(dekSource: Buffer, keyId: string, annotations: Readonly<Record<string, Buffer>>): void {
  if (dekSource.length === 0 || dekSource.length > MAX_DEK_SOURCE) throw new Error(`the encrypted DEK source is ${dekSource.length} bytes (1–${MAX_DEK_SOURCE})`);
  if (keyId === "" || keyId.length > MAX_KEY_ID) throw new Error(`the key ID is ${keyId.length} bytes (1–${MAX_KEY_ID})`);
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) {
    if (!/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(k)) throw new Error(`annotation key ${JSON.stringify(k)} is not a fully qualified domain name`);
    size += k.length + v.length;
  }
  if (size > MAX_ANNOTATIONS) throw new Error(`annotations are ${size} bytes, over ${MAX_ANNOTATIONS}`);
}

export class KmsTransformer implements Transformer {
  readonly prefix: Buffer;
  readonly name: string;
  private readonly client: KmsClient;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private state: WriteState | undefined;
  /** Unwrapped seeds by the hash of what wraps them; bounded (a few per key ID and restart are expected). */
  private readonly seeds = new LRUCache<string, Buffer>({ max: 1024 });
  private readonly unwrapping = new Map<string, Promise<Buffer>>();
  private refreshing: Promise<void> | undefined;
  /** Key ID changes seen (the first answer included): each may change what `stale` says of a stored value. */
  private rotations = 0;
  private last: { at: number; error: Error | undefined } | undefined;
  private timer: CancelTimer | undefined;
  private closed = false;
  private untrackSeeds: (() => void) | undefined;

  constructor(
    readonly settings: KmsSettings,
    options: { clock?: Clock; logger?: Logger } = {},
  ) {
    this.prefix = Buffer.from(`${ENCRYPTED_PREFIX}kms:v2:${settings.name}:`, "latin1");
    this.name = `kms/${settings.name}`;
    this.client = new KmsClient(settings.endpoint, settings.timeoutMs, settings.name);
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger();
  }

  /** First status and seed, then the poll loop. Resolves either way: a failure shows in health and in writes. */
  async start(): Promise<Error | undefined> {
    // Only a started provider serves: one parsed from a file that was then refused is never reported.
    this.untrackSeeds = kmsMetrics.trackSeeds(this.settings.name, () => this.seeds.size);
    const error = await this.refresh().then(() => undefined, (err: Error) => err);
    if (error) this.logger.warn({ provider: this.name, err: error.message }, "the KMS plugin did not answer at start; writes through this provider fail until it does");
    this.schedule();
    return error;
  }

  private schedule(): void {
    if (this.closed) return;
    const failing = this.last?.error !== undefined;
    this.timer = this.clock.setTimer(failing ? KMS_POLL_FAILING_MS : KMS_POLL_HEALTHY_MS, () => {
      void this.refresh().catch(() => undefined).finally(() => this.schedule());
    });
  }

  /** Asks Status; a new key ID (or no seed yet) gets a new seed through Encrypt, else the current seed's time is extended. */
  refresh(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async doRefresh(): Promise<void> {
    // The coasting time starts before the call: 3 minutes is an upper bound from the last answer.
    const expiresAt = this.clock.now() + KMS_WRITE_TTL_MS;
    try {
      const status = await this.client.status();
      const problems: string[] = [];
      if (status.healthz !== "ok") problems.push(`got unexpected healthz status: ${status.healthz}`);
      if (status.version !== "v2" && status.version !== "v2beta1") problems.push(`expected KMSv2 API version v2, got ${status.version}`);
      const valid = status.key_id !== "" && status.key_id.length <= MAX_KEY_ID;
      if (valid) kmsMetrics.keyIdFromStatus(this.settings.name, status.key_id, this.clock.now());
      else kmsMetrics.invalidKeyIdFromStatus(this.settings.name, status.key_id === "" ? "empty" : "too_long");
      if (!valid) {
        problems.push(`got invalid KMSv2 KeyID hash "${keyIdHash(status.key_id)}": the key ID is ${status.key_id.length} bytes (1–${MAX_KEY_ID})`);
      } else if (this.state?.keyId === status.key_id) {
        // As upstream, a plugin that answers with a valid key ID extends the seed even while it reports unhealthy.
        this.state.expiresAt = expiresAt;
      } else {
        await this.rotate(status.key_id, expiresAt).catch((err: Error) => problems.push(`failed to rotate DEK: ${err.message}`));
      }
      if (problems.length > 0) throw new Error(problems.join("; "));
      this.last = { at: this.clock.now(), error: undefined };
    } catch (err) {
      const error = new Error(`kmsv2 Provider ${this.settings.name} is not healthy, error: ${(err as Error).message}`);
      this.last = { at: this.clock.now(), error };
      throw error;
    }
  }

  private async rotate(statusKeyId: string, expiresAt: number): Promise<void> {
    const seed = randomBytes(SEED_BYTES);
    const res = await this.client.encrypt(randomUUID(), seed);
    checkWrapped(res.ciphertext, res.key_id, res.annotations);
    if (res.key_id !== statusKeyId) throw new Error(`Encrypt answered key ID hash "${keyIdHash(res.key_id)}" but Status "${keyIdHash(statusKeyId)}"`);
    const wrapped = { keyID: res.key_id, encryptedDEKSource: Buffer.from(res.ciphertext), annotations: res.annotations, encryptedDEKSourceType: HKDF_SHA256_XNONCE_AES_GCM_SEED };
    this.seeds.set(cacheKey(wrapped), seed);
    const old = this.state?.keyId;
    this.state = { keyId: res.key_id, seed, tail: encodeObjectTail(wrapped), expiresAt };
    this.rotations++;
    this.logger.info({ provider: this.name, keyIdHash: keyIdHash(res.key_id), ...(old !== undefined && { oldKeyIdHash: keyIdHash(old) }) }, old === undefined ? "KMS data key seed generated" : "KMS key ID changed: new data key seed; values under the old key ID read as stale until rewritten");
  }

  /** The readiness answer: the last one if recent, else a fresh Status (which may also rotate the seed). */
  async check(): Promise<void> {
    const last = this.last;
    if (last && this.clock.now() - last.at < (last.error ? CHECK_TTL_FAILED_MS : CHECK_TTL_OK_MS)) {
      if (last.error) throw last.error;
      return;
    }
    await this.refresh();
  }

  seal(plain: Uint8Array, storageKey: string): Buffer {
    const s = this.state;
    const now = this.clock.now();
    if (!s || now > s.expiresAt) {
      const why = !s
        ? "no data key yet: the KMS plugin has not answered since start"
        : `encryptedDEKSource with keyID hash "${keyIdHash(s.keyId)}" expired at ${new Date(s.expiresAt).toISOString()} (current time is ${new Date(now).toISOString()})`;
      const last = this.last?.error ? `; ${this.last.error.message}` : "";
      throw new PlatformError("INTERNAL", `Internal error occurred: cannot encrypt ${storageKey} with KMS provider ${this.settings.name}: ${why}${last}`);
    }
    const info = randomBytes(INFO_BYTES);
    const data = Buffer.concat([info, gcmSeal(deriveKey(s.seed, info), plain, storageKey)]);
    kmsMetrics.keyIdUsed("to_storage", this.settings.name, s.keyId, now);
    return encodeWithTail(data, s.tail);
  }

  open(body: Uint8Array, storageKey: string): Buffer | Promise<Buffer> {
    const o = decodeObject(body);
    checkObject(o);
    kmsMetrics.keyIdUsed("from_storage", this.settings.name, o.keyID, this.clock.now());
    const key = cacheKey(o);
    const seed = this.seeds.get(key);
    if (seed) return openData(o, seed, storageKey);
    return this.unwrap(key, o).then((unwrapped) => openData(o, unwrapped, storageKey));
  }

  generation(): number {
    return this.rotations;
  }

  stale(body: Uint8Array): boolean {
    // Before the plugin first answered the current key ID is unknown: nothing is called stale on a guess.
    if (!this.state) return false;
    const o = decodeObject(body);
    return o.keyID !== this.state.keyId || o.encryptedDEKSourceType !== HKDF_SHA256_XNONCE_AES_GCM_SEED;
  }

  /** One Decrypt per wrapped seed however many reads wait for it. */
  private unwrap(key: string, o: EncryptedObject): Promise<Buffer> {
    let pending = this.unwrapping.get(key);
    if (!pending) {
      pending = this.client
        .decrypt(randomUUID(), { ciphertext: o.encryptedDEKSource, key_id: o.keyID, annotations: o.annotations })
        .then(
          (plain) => {
            this.seeds.set(key, Buffer.from(plain));
            return plain;
          },
          (err: Error) => {
            throw new Error(`failed to decrypt DEK, error: ${err.message}`, { cause: err });
          },
        )
        .finally(() => this.unwrapping.delete(key));
      this.unwrapping.set(key, pending);
    }
    return pending;
  }

  close(): void {
    this.closed = true;
    this.untrackSeeds?.();
    this.timer?.();
    this.client.close();
  }
}

function openData(o: EncryptedObject, seedOrKey: Buffer, storageKey: string): Buffer {
  if (o.encryptedDEKSourceType === AES_GCM_KEY) return gcmOpen(seedOrKey, o.encryptedData, storageKey);
  if (o.encryptedData.length < INFO_BYTES) throw new Error("the stored data was shorter than the required size");
  const info = o.encryptedData.subarray(0, INFO_BYTES);
  return gcmOpen(deriveKey(seedOrKey, info), o.encryptedData.subarray(INFO_BYTES), storageKey);
}

/** Upstream keys its cache on everything that identifies a wrapped seed: type, wrapped bytes, key ID, annotations. */
function cacheKey(o: Pick<EncryptedObject, "encryptedDEKSourceType" | "encryptedDEKSource" | "keyID" | "annotations">): string {
  const h = createHash("sha256").update(`${o.encryptedDEKSourceType}\0`).update(o.encryptedDEKSource).update(`\0${o.keyID}\0`);
  for (const k of Object.keys(o.annotations).sort()) h.update(`${k}\0`).update(o.annotations[k]!).update("\0");
  return h.digest("base64");
}
