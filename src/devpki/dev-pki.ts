// The dev PKI engine behind `platform-ca dev-certs`: look at what is on disk, plan, issue what is due, write, remember.
import PQueue from "p-queue";
import type { LeafKind, ManifestCertificate, PkiManifest } from "../config/pki-manifest.js";
import { PlatformError, toPlatformError } from "../errors.js";
import { generateCa } from "../pki/ca.js";
import { generateKeyPair } from "../pki/keys.js";
import { SigningPool } from "../pki/signing-pool.js";
import { MIN_EXPIRATION_SECONDS } from "../pki/validity.js";
import type { CaKeyPair } from "../pki/types.js";
import type { Signer } from "../../signers/signer.js";
import { ensureDir, pairPaths, writePair } from "../pki/files.js";
import { issueLeaf } from "./leaf.js";
import { findPair, loadFoundCa, sha256Hex, type FoundPair } from "./material.js";
import { planDevPki, type Action } from "./plan.js";
import { readState, writeState, type DevPkiState, type IssuedRecord } from "./state.js";
import { createSignerFor } from "./signer-factory.js";

/** Default renewal margin: thirty days. */
export const DEFAULT_RENEW_WITHIN_SECONDS = 720 * 3600;

export interface DevPkiOptions {
  readonly manifest: PkiManifest;
  readonly outDir: string;
  readonly now?: () => Date;
  /** Renew what expires within this many seconds (default 720h). */
  readonly renewWithinSeconds?: number;
  /** Re-issue every leaf certificate; CAs are kept. */
  readonly force?: boolean;
  /** Leaf certificates issued so far out of those due, after each one. */
  readonly onProgress?: (done: number, total: number) => void;
  /** How many leaves are issued at once (key generation runs on libuv's pool). */
  readonly concurrency?: number;
}

export interface DevPkiRow {
  readonly name: string;
  readonly kind: "ca" | LeafKind;
  readonly action: Action;
  readonly reason: string;
  readonly notAfter: Date;
  /** Paths of the certificate and key. */
  readonly files: readonly string[];
}

interface CaSlot {
  readonly sha256: string;
  readonly notAfter: Date;
  /** Made in this run, or loaded from disk when a leaf needs it. */
  ca?: CaKeyPair;
}

/** The pairs present on disk for `names`, by name. */
async function findAll(outDir: string, names: readonly string[], isCa: boolean): Promise<Map<string, FoundPair>> {
  const found = await Promise.all(names.map(async (name) => [name, await findPair(pairPaths(outDir, name), isCa)] as const));
  return new Map(found.filter((e): e is [string, FoundPair] => e[1] !== undefined));
}

/** Runs the manifest against `outDir` and returns one row per CA and certificate, in manifest order. */
export async function runDevPki(options: DevPkiOptions): Promise<DevPkiRow[]> {
  const { manifest, outDir } = options;
  const now = (options.now ?? (() => new Date()))();
  await ensureDir(outDir);
  const state = await readState(outDir);
  const foundCas = await findAll(outDir, manifest.cas.map((c) => c.name), true);
  const foundLeaves = await findAll(outDir, manifest.certificates.map((c) => c.name), false);
  const plan = planDevPki({
    manifest,
    state,
    cas: foundCas,
    certificates: foundLeaves,
    now,
    renewWithinSeconds: options.renewWithinSeconds ?? DEFAULT_RENEW_WITHIN_SECONDS,
    force: options.force ?? false,
  });

  // Leaf keys do not depend on the CA: generating them while the CA key is made keeps both cores busy.
  const due = plan.certificates.filter((d) => d.action !== "kept");
  const keys = new Map(due.map((d) => [d.entry.name, generateKeyPair(d.entry.keyType)]));
  for (const pending of keys.values()) pending.catch(() => {});

  const cas = new Map<string, CaSlot>();
  const nextState: { cas: Record<string, IssuedRecord>; certificates: Record<string, IssuedRecord> } = { cas: {}, certificates: {} };
  for (const { entry, action, entryFingerprint } of plan.cas) {
    const found = foundCas.get(entry.name);
    let slot: CaSlot;
    if (action === "kept" && found) {
      slot = { sha256: found.sha256, notAfter: found.notAfter };
    } else {
      const made = await generateCa({ commonName: entry.commonName, keyType: entry.keyType, lifetimeSeconds: entry.lifetimeSeconds, now });
      await writePair(pairPaths(outDir, entry.name), made.certPem, made.keyPem);
      slot = { ca: made.ca, sha256: sha256Hex(made.ca.certDer), notAfter: made.ca.notAfter };
    }
    nextState.cas[entry.name] = { entry: entryFingerprint, cert: slot.sha256 };
    cas.set(entry.name, slot);
  }

  const caOf = (name: string): CaKeyPair => {
    const slot = cas.get(name)!;
    slot.ca ??= loadFoundCa(foundCas.get(name)!, pairPaths(outDir, name));
    return slot.ca;
  };
  const signers = new Map<string, Promise<Signer>>();
  const signerOf = (entry: ManifestCertificate): Promise<Signer> | undefined => {
    if (entry.signer === undefined) return undefined;
    let signer = signers.get(entry.signer);
    if (signer === undefined) {
      const ca = caOf(entry.ca);
      const policy = manifest.signers.find((s) => s.name === entry.signer)?.policy;
      signer = createSignerFor({
        signerName: entry.signer,
        ca,
        groupSuffix: manifest.groupSuffix,
        // A dev signer honours any lifetime its CA can cover; the CA's NotAfter still clamps it.
        maxDurationSeconds: Math.max(MIN_EXPIRATION_SECONDS, Math.floor((ca.notAfter.getTime() - ca.notBefore.getTime()) / 1000)),
        ...(policy !== undefined && { policyFile: policy }),
        now: () => now,
      });
      signers.set(entry.signer, signer);
    }
    return signer;
  };

  let done = 0;
  let started = 0;
  const queue = new PQueue({ concurrency: options.concurrency ?? 8 });
  // Leaves waiting behind each signature go to the pool as its backlog: it uses the other cores only when that work
  // is worth starting threads (20 leaves of P-256 or RSA-3072 CAs are not; hundreds of RSA ones are).
  const pool = new SigningPool();
  const issuing = Promise.all(
      due.map((decision) =>
        queue.add(async () => {
          const { entry } = decision;
          const signer = await signerOf(entry);
          const backlog = due.length - ++started;
          const leaf = await issueLeaf({ ...entry, ca: caOf(entry.ca), signer, now, keys: keys.get(entry.name)!, pool, backlog }).catch((err: unknown) => {
            throw refusal(entry, err);
          });
          await writePair(pairPaths(outDir, entry.name), leaf.certPem, leaf.keyPem);
          options.onProgress?.(++done, due.length);
          return [entry.name, leaf] as const;
        }),
      ),
  ).finally(() => pool.close());
  const issued = new Map(await issuing);

  const rows: DevPkiRow[] = plan.cas.map(({ entry, action, reason }) => ({
    name: entry.name,
    kind: "ca",
    action,
    reason,
    notAfter: cas.get(entry.name)!.notAfter,
    files: Object.values(pairPaths(outDir, entry.name)),
  }));
  for (const { entry, action, reason, entryFingerprint } of plan.certificates) {
    const seen = issued.get(entry.name) ?? foundLeaves.get(entry.name)!;
    nextState.certificates[entry.name] = { entry: entryFingerprint, cert: seen.sha256, ca: cas.get(entry.ca)!.sha256 };
    rows.push({ name: entry.name, kind: entry.kind, action, reason, notAfter: seen.notAfter, files: Object.values(pairPaths(outDir, entry.name)) });
  }
  const finalState: DevPkiState = { version: 1, ...nextState };
  if (JSON.stringify(finalState) !== JSON.stringify(state)) await writeState(outDir, finalState);
  return rows;
}

function refusal(entry: ManifestCertificate, err: unknown): PlatformError {
  const e = toPlatformError(err);
  const by = entry.signer === undefined ? `CA ${entry.ca}` : `signer ${entry.signer}`;
  return new PlatformError(e.code, `certificate ${entry.name} (${by}): ${e.message}`, { cause: err, causes: e.causes });
}
