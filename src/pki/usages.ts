// The 23 CSR usage strings of the seed, mapped to X.509 KeyUsage bits and ExtendedKeyUsage OIDs.
import { PlatformError } from "../errors.js";
import type { UsageSet } from "./types.js";

/** KeyUsage bit numbers as in RFC 5280 §4.2.1.3 (bit 0 is the most significant bit of the first byte). */
export const KeyUsageBit = {
  digitalSignature: 0,
  contentCommitment: 1,
  keyEncipherment: 2,
  dataEncipherment: 3,
  keyAgreement: 4,
  keyCertSign: 5,
  cRLSign: 6,
  encipherOnly: 7,
  decipherOnly: 8,
} as const;

export type KeyUsageName = keyof typeof KeyUsageBit;

/** ExtendedKeyUsage purpose OIDs (RFC 5280 §4.2.1.12 and vendor ones the seed names). */
export const ExtKeyUsageOid = {
  any: "2.5.29.37.0",
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
  codeSigning: "1.3.6.1.5.5.7.3.3",
  emailProtection: "1.3.6.1.5.5.7.3.4",
  ipsecEndSystem: "1.3.6.1.5.5.7.3.5",
  ipsecTunnel: "1.3.6.1.5.5.7.3.6",
  ipsecUser: "1.3.6.1.5.5.7.3.7",
  timeStamping: "1.3.6.1.5.5.7.3.8",
  ocspSigning: "1.3.6.1.5.5.7.3.9",
  microsoftSgc: "1.3.6.1.4.1.311.10.3.3",
  netscapeSgc: "2.16.840.1.113730.4.1",
} as const;

type Mapping = { readonly keyUsage: KeyUsageName } | { readonly extKeyUsage: string };

const MAPPINGS = {
  signing: { keyUsage: "digitalSignature" },
  "digital signature": { keyUsage: "digitalSignature" },
  "content commitment": { keyUsage: "contentCommitment" },
  "key encipherment": { keyUsage: "keyEncipherment" },
  "key agreement": { keyUsage: "keyAgreement" },
  "data encipherment": { keyUsage: "dataEncipherment" },
  "cert sign": { keyUsage: "keyCertSign" },
  "crl sign": { keyUsage: "cRLSign" },
  "encipher only": { keyUsage: "encipherOnly" },
  "decipher only": { keyUsage: "decipherOnly" },
  any: { extKeyUsage: ExtKeyUsageOid.any },
  "server auth": { extKeyUsage: ExtKeyUsageOid.serverAuth },
  "client auth": { extKeyUsage: ExtKeyUsageOid.clientAuth },
  "code signing": { extKeyUsage: ExtKeyUsageOid.codeSigning },
  "email protection": { extKeyUsage: ExtKeyUsageOid.emailProtection },
  "s/mime": { extKeyUsage: ExtKeyUsageOid.emailProtection },
  "ipsec end system": { extKeyUsage: ExtKeyUsageOid.ipsecEndSystem },
  "ipsec tunnel": { extKeyUsage: ExtKeyUsageOid.ipsecTunnel },
  "ipsec user": { extKeyUsage: ExtKeyUsageOid.ipsecUser },
  timestamping: { extKeyUsage: ExtKeyUsageOid.timeStamping },
  "ocsp signing": { extKeyUsage: ExtKeyUsageOid.ocspSigning },
  "microsoft sgc": { extKeyUsage: ExtKeyUsageOid.microsoftSgc },
  "netscape sgc": { extKeyUsage: ExtKeyUsageOid.netscapeSgc },
} as const satisfies Record<string, Mapping>;

export type Usage = keyof typeof MAPPINGS;

/** The 23 usage strings the seed allows, in seed order. */
export const KNOWN_USAGES: readonly Usage[] = Object.freeze(Object.keys(MAPPINGS) as Usage[]);

const LOOKUP = new Map<string, Mapping>(Object.entries(MAPPINGS));

export function isKnownUsage(value: string): value is Usage {
  return LOOKUP.has(value);
}

/** The KeyUsage bit mask value of one bit number (bit 0 = 1 << 0 in UsageSet.keyUsage). */
export function keyUsageMask(name: KeyUsageName): number {
  return 1 << KeyUsageBit[name];
}

/** Maps seed usage strings to a UsageSet; duplicates collapse, unknown strings are refused. */
export function resolveUsages(usages: readonly string[]): UsageSet {
  let keyUsage = 0;
  const extKeyUsage: string[] = [];
  for (const usage of usages) {
    const mapping = LOOKUP.get(usage);
    if (mapping === undefined) {
      throw new PlatformError(
        "USAGE_UNKNOWN",
        `unknown usage ${JSON.stringify(usage)}; allowed: ${KNOWN_USAGES.map((u) => JSON.stringify(u)).join(", ")}`,
        { details: { usage } },
      );
    }
    if ("keyUsage" in mapping) keyUsage |= keyUsageMask(mapping.keyUsage);
    else if (!extKeyUsage.includes(mapping.extKeyUsage)) extKeyUsage.push(mapping.extKeyUsage);
  }
  return { keyUsage, extKeyUsage };
}

/** Usage strings that appear more than once, each reported once, in order of first repeat. */
export function findDuplicateUsages(usages: readonly string[]): string[] {
  const seen = new Set<string>();
  const duplicates: string[] = [];
  for (const usage of usages) {
    if (seen.has(usage)) {
      if (!duplicates.includes(usage)) duplicates.push(usage);
    } else {
      seen.add(usage);
    }
  }
  return duplicates;
}
