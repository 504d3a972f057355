// Loads and validates the dev PKI manifest (`certs-dev/pki.yaml`): CAs, which CA backs each signer, named leaf certificates.
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { dirname, resolve } from "node:path";
import { parsePlainYaml } from "../plain-data.js";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { PlatformError } from "../errors.js";
import { signerNameProblem } from "../../signers/signer-name.js";
import { DURATION_SYNTAX } from "../fields/duration.js";
import { describeValue as describe, FieldReader, type Doc } from "../fields/reader.js";
import { isKnownUsage, KNOWN_USAGES } from "../pki/usages.js";
import { KEY_TYPES, type KeyType } from "../pki/keys.js";

export const LEAF_KINDS = ["server", "client", "both"] as const;
export type LeafKind = (typeof LEAF_KINDS)[number];

/** Usages a leaf gets when its entry lists none: what the seed calls a typical serving / client request. */
export const DEFAULT_USAGES: Readonly<Record<LeafKind, readonly string[]>> = {
  server: ["digital signature", "key encipherment", "server auth"],
  client: ["digital signature", "key encipherment", "client auth"],
  both: ["digital signature", "key encipherment", "server auth", "client auth"],
};

export interface ManifestCa {
  readonly name: string;
  readonly commonName: string;
  readonly organizations: readonly string[];
  readonly keyType: KeyType;
  readonly lifetimeSeconds: number;
}

export interface ManifestSigner {
  /** Full signer name (`platform.io/apiserver-client`, `example.com/foo`). */
  readonly name: string;
  readonly ca: string;
  /** Absolute path of a custom signer's policy file. */
  readonly policy?: string;
}

export interface ManifestCertificate {
  readonly name: string;
  readonly kind: LeafKind;
  readonly commonName: string;
  readonly organizations: readonly string[];
  readonly organizationalUnits: readonly string[];
  readonly dns: readonly string[];
  readonly ip: readonly string[];
  readonly email: readonly string[];
  readonly uri: readonly string[];
  readonly usages: readonly string[];
  readonly lifetimeSeconds: number;
  readonly keyType: KeyType;
  /** Full name of the signer whose rules issue it; absent when the CA mints it directly. */
  readonly signer?: string;
  /** The CA that issues it (the signer's CA when a signer is named). */
  readonly ca: string;
}

export interface PkiManifest {
  readonly source: string;
  readonly groupSuffix: string;
  readonly cas: readonly ManifestCa[];
  readonly signers: readonly ManifestSigner[];
  readonly certificates: readonly ManifestCertificate[];
}

const NAME_RE = /^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/;
const MIN_LIFETIME_SECONDS = 600;
const DEFAULT_CA_LIFETIME = 10 * 365 * 86_400;
const DEFAULT_LEAF_LIFETIME = 365 * 86_400;

/** The one field reader plus the few shapes only the manifest has. */
class ManifestReader extends FieldReader {
  constructor() {
    super({ unknownFieldsAreErrors: true });
  }
  doc(value: unknown, field: string, known: readonly string[]): Doc {
    return this.object(value, field, known) ?? {};
  }
  required(value: unknown, field: string, fallback?: string): string {
    if (value === undefined || value === null) {
      if (fallback !== undefined) return fallback;
      this.missing(field);
    }
    return this.string(value, field, { nonEmpty: true }) ?? "";
  }
  lifetime(value: unknown, field: string, fallback: number): number {
    if (value === undefined) return fallback;
    // null is not "absent" here: a lifetime key written without a value is a mistake, not the default.
    const ms = value === null
      ? this.problem(field, DURATION_SYNTAX, value)
      : this.duration(value, field, { min: MIN_LIFETIME_SECONDS * 1000, wholeSeconds: true });
    return ms === undefined ? MIN_LIFETIME_SECONDS : ms / 1000;
  }
  name(value: unknown, field: string, seen: Set<string>): string {
    const name = this.required(value, field);
    if (!name) return name;
    if (!NAME_RE.test(name)) this.problem(field, "lower-case letters, digits, '.', '_' or '-' (a file name)", name);
    else if (seen.has(name)) this.problem(field, "a name not used before (CA and certificate names share one directory)", name);
    seen.add(name);
    return name;
  }
}

const expected = (what: string, test: (s: string) => boolean) => (s: string): string | undefined => (test(s) ? undefined : what);
const checkIp = expected("an IPv4 or IPv6 address", (s) => isIP(s) !== 0);
const checkEmail = expected("an email address", (s) => /^[^@\s]+@[^@\s]+$/.test(s));
const checkDns = expected("a DNS name", (s) => /^(\*\.)?([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/i.test(s));
const checkUri = expected("an absolute URI", (s) => /^[a-z][a-z0-9+.-]*:\S+$/i.test(s) && URL.canParse(s));
const checkUsage = expected(`one of ${KNOWN_USAGES.join(", ")}`, isKnownUsage);

/** Parses manifest text; `source` is the file it came from (relative policy paths resolve against its directory). */
export function parsePkiManifest(text: string, source: string): PkiManifest {
  let value: unknown;
  try {
    value = parsePlainYaml(text, { prettyErrors: false });
  } catch (err) {
    throw new PlatformError("MANIFEST_INVALID", `invalid dev PKI manifest ${source}: ${(err as Error).message}`);
  }
  const ck = new ManifestReader();
  const top = ck.doc(value, "", ["version", "groupSuffix", "defaults", "cas", "signers", "certificates"]);
  if (top.version !== 1) ck.problem("version", "1", top.version);
  const groupSuffix = ck.required(top.groupSuffix, "groupSuffix", DEFAULT_GROUP_SUFFIX);
  let names = groupNames(DEFAULT_GROUP_SUFFIX);
  try {
    names = groupNames(groupSuffix);
  } catch {
    ck.problem("groupSuffix", "a DNS name with at least two labels", groupSuffix);
  }
  const wellKnown = new Map(Object.values(names.signers).map((full) => [full.slice(names.domain.length + 1), full]));
  const builtin = new Set(wellKnown.values());
  const fullSignerName = (s: string): string => wellKnown.get(s) ?? s;

  const defaults = ck.doc(top.defaults, "defaults", ["keyType", "lifetime"]);
  const defaultKey = ck.oneOf(defaults.keyType, "defaults.keyType", KEY_TYPES, "p256");
  const defaultLifetime = ck.lifetime(defaults.lifetime, "defaults.lifetime", DEFAULT_LEAF_LIFETIME);

  const seen = new Set<string>();
  const cas = ck.list(top.cas, "cas").map((raw, i): ManifestCa => {
    const f = `cas[${i}]`;
    const o = ck.doc(raw, f, ["name", "commonName", "organizations", "keyType", "lifetime"]);
    const name = ck.name(o.name, `${f}.name`, seen);
    return {
      name,
      commonName: ck.required(o.commonName, `${f}.commonName`, name),
      organizations: ck.strings(o.organizations, `${f}.organizations`),
      keyType: ck.oneOf(o.keyType, `${f}.keyType`, KEY_TYPES, defaultKey),
      lifetimeSeconds: ck.lifetime(o.lifetime, `${f}.lifetime`, DEFAULT_CA_LIFETIME),
    };
  });
  if (cas.length === 0) ck.problem("cas", "at least one CA", top.cas);
  const caNames = new Set(cas.map((c) => c.name));
  const defaultCa = cas[0]?.name ?? "";
  const checkCaRef = (value: unknown, field: string): string => {
    const ca = ck.required(value, field, defaultCa);
    if (ca && !caNames.has(ca)) ck.problem(field, "the name of a CA in cas", ca);
    return ca;
  };

  const signers = ck.list(top.signers, "signers").map((raw, i): ManifestSigner => {
    const f = `signers[${i}]`;
    const o = ck.doc(raw, f, ["name", "ca", "policy"]);
    const name = fullSignerName(ck.required(o.name, `${f}.name`));
    const problem = name ? signerNameProblem(name) : undefined;
    if (problem) ck.problem(`${f}.name`, `a well-known signer (${[...wellKnown.keys()].join(", ")}) or a qualified name (${problem})`, o.name);
    if (!problem && !builtin.has(name) && o.policy === undefined) ck.missing(`${f}.policy`, `to be set for the custom signer ${describe(name)}`);
    const policy = o.policy === undefined ? undefined : resolve(dirname(source), ck.required(o.policy, `${f}.policy`));
    return { name, ca: checkCaRef(o.ca, `${f}.ca`), ...(policy ? { policy } : {}) };
  });
  const signerNames = new Set(signers.map((s) => s.name));
  if (signerNames.size !== signers.length) ck.problem("signers", "each signer once", top.signers);

  const certificates = ck.list(top.certificates, "certificates").map((raw, i): ManifestCertificate => {
    const f = `certificates[${i}]`;
    const o = ck.doc(raw, f, [
      "name", "kind", "commonName", "organizations", "organizationalUnits", "dns", "ip", "email", "uri",
      "usages", "lifetime", "keyType", "signer", "ca",
    ]);
    const name = ck.name(o.name, `${f}.name`, seen);
    const kind = ck.oneOf(o.kind, `${f}.kind`, LEAF_KINDS, "server");
    const dns = ck.strings(o.dns, `${f}.dns`, checkDns);
    const ip = ck.strings(o.ip, `${f}.ip`, checkIp);
    if (kind !== "client" && dns.length + ip.length === 0) ck.problem(`${f}.dns`, `at least one dns or ip name for a ${kind} certificate`, o.dns);
    const usages = ck.strings(o.usages, `${f}.usages`, checkUsage);
    let signer: string | undefined;
    let ca: string;
    if (o.signer !== undefined) {
      signer = fullSignerName(ck.required(o.signer, `${f}.signer`));
      if (o.ca !== undefined) ck.problem(`${f}.ca`, "not to be set with signer (set either signer, whose CA issues, or ca, which mints directly)", o.ca);
      const listed = signers.find((s) => s.name === signer);
      if (!listed && !builtin.has(signer)) {
        ck.problem(`${f}.signer`, "a well-known signer or one listed in signers", o.signer);
      }
      ca = listed?.ca ?? defaultCa;
    } else {
      ca = checkCaRef(o.ca, `${f}.ca`);
    }
    return {
      name,
      kind,
      commonName: ck.required(o.commonName, `${f}.commonName`, name),
      organizations: ck.strings(o.organizations, `${f}.organizations`),
      organizationalUnits: ck.strings(o.organizationalUnits, `${f}.organizationalUnits`),
      dns,
      ip,
      email: ck.strings(o.email, `${f}.email`, checkEmail),
      uri: ck.strings(o.uri, `${f}.uri`, checkUri),
      usages: usages.length > 0 ? usages : DEFAULT_USAGES[kind],
      lifetimeSeconds: ck.lifetime(o.lifetime, `${f}.lifetime`, defaultLifetime),
      keyType: ck.oneOf(o.keyType, `${f}.keyType`, KEY_TYPES, defaultKey),
      ...(signer ? { signer } : {}),
      ca,
    };
  });

  ck.throwIfInvalid("MANIFEST_INVALID", "dev PKI manifest", source);
  return { source, groupSuffix: names.suffix, cas, signers, certificates };
}

/** Reads and validates a manifest file. */
export async function loadPkiManifest(path: string): Promise<PkiManifest> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new PlatformError("IO_ERROR", `cannot read dev PKI manifest ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
  }
  return parsePkiManifest(text, path);
}
