// Builds the signer registry the controllers use from configuration: built-in signers over CA files, policy signers, plug-ins.
import type { GroupNames } from "../../api/group.js";
import { invalidOption } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { CaSource } from "../../pki/ca-source.js";
import { createBuiltinSigners } from "../../../signers/builtins.js";
import type { BuiltinSignerKey } from "../../../signers/builtin-signer.js";
import { loadSignerPlugin } from "../../../signers/plugin.js";
import { loadPolicySigner } from "../../../signers/policy.js";
import { SignerRegistry } from "../../../signers/registry.js";
import type { Signer } from "../../../signers/signer.js";

export interface CaFilePair {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface SignerSetupOptions {
  readonly names: GroupNames;
  /** CA files per built-in signer name; signers without an entry are not created. */
  readonly signingFiles: ReadonlyMap<string, CaFilePair>;
  /** Cluster maximum lifetime (ClusterSigningDuration) in seconds. */
  readonly maxDurationSeconds: number;
  readonly customSigners?: readonly { readonly policyFile: string }[];
  readonly plugins?: readonly { readonly module: string; readonly options?: unknown }[];
  readonly logger: Logger;
  readonly now?: () => Date;
  /** How often CA files are checked for a replacement between signatures (default 30 s; 0 = only before each signature). */
  readonly caPollMs?: number;
  /** CRL Distribution Point URL for CA-backed signers (`{signerName}` substituted); unset: none. */
  readonly crlDistributionPointUrl?: string;
}

export interface SignerSetup {
  readonly registry: SignerRegistry;
  /** Starts polling the CA files. */
  start(signal: AbortSignal): Promise<void>;
  stop(): void;
}

/** Loads every CA once (a broken file fails here, with its name), then builds the signers. */
export async function signersFromConfig(o: SignerSetupOptions): Promise<SignerSetup> {
  const pollIntervalMs = o.caPollMs ?? 30_000;
  const byName = new Map<string, BuiltinSignerKey>(Object.entries(o.names.signers).map(([key, name]) => [name, key as BuiltinSignerKey]));
  // One source per file pair, so a cluster CA shared by four signers records every issuance in one history.
  const sources = new Map<string, CaSource>();
  const caPerSigner: Partial<Record<BuiltinSignerKey, CaSource>> = {};
  for (const [name, files] of o.signingFiles) {
    const key = byName.get(name);
    if (!key) throw invalidOption("signingFiles", `to name built-in signers (${[...byName.keys()].join(", ")})`, name);
    const id = `${files.certFile}\0${files.keyFile}`;
    let source = sources.get(id);
    if (!source) {
      source = new CaSource({ ...files, intermediates: true, logger: o.logger, pollIntervalMs, ...(o.now && { clock: o.now }) });
      await source.load();
      sources.set(id, source);
    }
    caPerSigner[key] = source;
  }
  const common = {
    maxDurationSeconds: o.maxDurationSeconds,
    logger: o.logger,
    ...(o.now && { now: o.now }),
    ...(o.crlDistributionPointUrl && { crlDistributionPointUrl: o.crlDistributionPointUrl }),
  };
  const signers: Signer[] = sources.size > 0 ? createBuiltinSigners({ ...common, groupSuffix: o.names.suffix, caPerSigner }) : [];
  for (const { policyFile } of o.customSigners ?? []) signers.push((await loadPolicySigner(policyFile, common)).signer);
  for (const p of o.plugins ?? []) {
    const options = (typeof p.options === "object" && p.options !== null ? p.options : {}) as Record<string, unknown>;
    signers.push(await loadSignerPlugin(p.module, { ...common, groupSuffix: o.names.suffix, options }));
  }
  const registry = new SignerRegistry(signers);
  return {
    registry,
    async start(signal) {
      for (const s of sources.values()) await s.start(signal);
    },
    stop() {
      for (const s of sources.values()) s.stop();
    },
  };
}
