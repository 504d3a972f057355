// Decides, without I/O, what a dev PKI run does with each CA and certificate: issue, keep or renew, and why.
import type { ManifestCa, ManifestCertificate, PkiManifest } from "../config/pki-manifest.js";
import { fingerprint, type DevPkiState } from "./state.js";

export type Action = "issued" | "kept" | "renewed";

/** What is on disk for one entry: absent, or a readable certificate (and key) with these facts. */
export interface Observation {
  /** sha256 (hex) of the certificate's DER. */
  readonly sha256: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
}

export interface Decision<E> {
  readonly entry: E;
  readonly action: Action;
  readonly reason: string;
  /** Fingerprint of the normalized entry, recorded in the state when issued. */
  readonly entryFingerprint: string;
}

export interface PlanInput {
  readonly manifest: PkiManifest;
  readonly state: DevPkiState;
  /** Observations by CA name / certificate name; absent when the files are missing. */
  readonly cas: ReadonlyMap<string, Observation>;
  readonly certificates: ReadonlyMap<string, Observation>;
  readonly now: Date;
  /** Renew what expires within this many seconds. */
  readonly renewWithinSeconds: number;
  /** Re-issue every leaf certificate (CAs are kept: a new CA breaks every trust store that holds the old one). */
  readonly force: boolean;
}

export interface Plan {
  readonly cas: readonly Decision<ManifestCa>[];
  readonly certificates: readonly Decision<ManifestCertificate>[];
}

/** The parts of a certificate entry that shape what is issued; the policy path is part of its signer. */
export function certificateFingerprint(manifest: PkiManifest, entry: ManifestCertificate): string {
  const policy = manifest.signers.find((s) => s.name === entry.signer)?.policy;
  return fingerprint({ ...entry, policy });
}

export function planDevPki(input: PlanInput): Plan {
  const { manifest, state, now } = input;
  const marginMs = input.renewWithinSeconds * 1000;
  const timeProblem = (o: Observation): string | undefined => {
    if (o.notBefore.getTime() > now.getTime()) return "not yet valid";
    if (o.notAfter.getTime() <= now.getTime()) return "expired";
    if (o.notAfter.getTime() - now.getTime() <= marginMs) return `expires ${o.notAfter.toISOString().slice(0, 10)}`;
    return undefined;
  };

  const cas = manifest.cas.map((entry): Decision<ManifestCa> => {
    const entryFingerprint = fingerprint(entry);
    const seen = input.cas.get(entry.name);
    const record = state.cas[entry.name];
    const decide = (action: Action, reason: string): Decision<ManifestCa> => ({ entry, action, reason, entryFingerprint });
    if (!seen) return decide("issued", record ? "missing files" : "new");
    // A CA found without a record (made by `dev-certs issue`, or the state was removed) is adopted, not replaced.
    if (record && record.entry !== entryFingerprint) return decide("renewed", "manifest changed");
    const problem = timeProblem(seen);
    return problem ? decide("renewed", problem) : decide("kept", "up to date");
  });
  const caChanged = new Map(cas.map((d) => [d.entry.name, d.action !== "kept"]));

  const certificates = manifest.certificates.map((entry): Decision<ManifestCertificate> => {
    const entryFingerprint = certificateFingerprint(manifest, entry);
    const seen = input.certificates.get(entry.name);
    const record = state.certificates[entry.name];
    const decide = (action: Action, reason: string): Decision<ManifestCertificate> => ({ entry, action, reason, entryFingerprint });
    if (!seen) return decide("issued", record ? "missing files" : "new");
    if (input.force) return decide("renewed", "forced");
    if (!record) return decide("renewed", "no record");
    if (record.entry !== entryFingerprint) return decide("renewed", "manifest changed");
    if (caChanged.get(entry.ca) || record.ca !== input.cas.get(entry.ca)?.sha256) return decide("renewed", "CA changed");
    if (record.cert !== seen.sha256) return decide("renewed", "changed on disk");
    const problem = timeProblem(seen);
    return problem ? decide("renewed", problem) : decide("kept", "up to date");
  });
  return { cas, certificates };
}
