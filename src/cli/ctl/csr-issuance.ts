// Getting a certificate through the API: generate a key and CSR, create the CSR object, wait for approval and issuance.
import { buildCsr, type CsrContent } from "../../pki/csr-builder.js";
import type { GroupNames } from "../../api/group.js";
import { findCondition, isApproved, isDenied, isFailed, isIssued } from "../../api/conditions.js";
import type { CertificateSigningRequest } from "../../api/types/csr.js";
import { parseRequestTimeout, type RestClient } from "../../client/index.js";
import { invalidOption, isPlatformError, PlatformError } from "../../errors.js";
import { generateKeyPair, KEY_TYPES, type KeyType } from "../../pki/keys.js";
import { encodePem } from "../../pki/pem.js";
import { isKnownUsage, KNOWN_USAGES } from "../../pki/usages.js";

/** What a client certificate is usually asked for with. */
export const DEFAULT_CLIENT_USAGES: readonly string[] = ["digital signature", "client auth"];

export function parseKeyType(value: string | undefined, flag = "--key-type"): KeyType {
  const v = value ?? "p256";
  if (!(KEY_TYPES as readonly string[]).includes(v)) throw invalidOption(flag, `to be one of ${KEY_TYPES.join(", ")}`, v);
  return v as KeyType;
}

export function parseUsages(value: string | readonly string[] | undefined, flag = "--usages"): string[] {
  if (value === undefined) return [...DEFAULT_CLIENT_USAGES];
  const list = (typeof value === "string" ? [value] : value).flatMap((v) => v.split(",")).map((u) => u.trim()).filter(Boolean);
  const unknown = list.find((u) => !isKnownUsage(u));
  if (list.length === 0 || unknown !== undefined) throw invalidOption(flag, `to be a comma-separated list of ${KNOWN_USAGES.join(", ")}`, value);
  return list;
}

export function parseExpirationSeconds(value: string | undefined, flag = "--expiration-seconds"): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 600 || n > 2 ** 31 - 1) throw invalidOption(flag, "to be whole seconds ≥ 600", value);
  return n;
}

/** `--timeout` of the waiting commands: a duration (5m, 90s, 1m30s) or whole seconds; 0 means the 5-minute default. */
export function parseTimeout(value: string, flag = "--timeout"): number {
  let ms: number;
  try {
    ms = parseRequestTimeout(value);
  } catch {
    throw invalidOption(flag, "to be a duration such as 90s, 5m or 1m30s", value);
  }
  return ms > 0 ? ms : 5 * 60_000;
}

/** A fresh key and a CSR for it (PEM texts). */
export async function generateRequest(subject: CsrContent, keyType: KeyType): Promise<{ keyPem: string; csrPem: string }> {
  const keys = await generateKeyPair(keyType);
  return { keyPem: keys.privateKeyPem, csrPem: encodePem("CERTIFICATE REQUEST", buildCsr(subject, keys)) };
}

export function csrResource(names: GroupNames) {
  return { group: names.certificates, version: "v1", plural: "certificatesigningrequests", namespaced: false } as const;
}

export interface SubmitOptions {
  /** The object's name, or a prefix for a generated one. */
  readonly name?: string;
  readonly generateName?: string;
  readonly signerName: string;
  readonly usages: readonly string[];
  readonly expirationSeconds?: number;
  readonly csrPem: string;
}

export async function submitCsr(client: RestClient, names: GroupNames, o: SubmitOptions): Promise<CertificateSigningRequest> {
  const obj: CertificateSigningRequest = {
    apiVersion: `${names.certificates}/v1`,
    kind: "CertificateSigningRequest",
    metadata: o.name ? { name: o.name } : { generateName: o.generateName ?? "csr-" },
    spec: {
      request: Buffer.from(o.csrPem).toString("base64"),
      signerName: o.signerName,
      usages: [...o.usages],
      ...(o.expirationSeconds !== undefined && { expirationSeconds: o.expirationSeconds }),
    },
  };
  return client.resource<CertificateSigningRequest>(csrResource(names)).create(obj);
}

export interface WaitOptions {
  readonly timeoutMs: number;
  /** Told once when the CSR waits for approval, once when it waits for the signer. */
  readonly onWaiting?: (what: "approval" | "issuance", csr: CertificateSigningRequest) => void;
  readonly signal?: AbortSignal;
  /** The CSR as the create returned it: what the caller is told first waits for, before any round trip. */
  readonly created?: CertificateSigningRequest;
}

function refusal(csr: CertificateSigningRequest): PlatformError | undefined {
  const name = csr.metadata.name;
  for (const [type, check] of [["Denied", isDenied], ["Failed", isFailed]] as const) {
    if (!check(csr)) continue;
    const c = findCondition(csr, type)!;
    const why = [c.reason, c.message].filter(Boolean).join(": ");
    return new PlatformError("SIGNER_REJECTED", `certificate signing request ${name} was ${type.toLowerCase()}${why ? `: ${why}` : ""}`);
  }
  return undefined;
}

/** Waits until the CSR carries a certificate (PEM returned); Denied or Failed ends it with the reason. */
export async function waitForCertificate(client: RestClient, names: GroupNames, name: string, o: WaitOptions): Promise<string> {
  const csrs = client.resource<CertificateSigningRequest>(csrResource(names));
  const deadline = AbortSignal.timeout(o.timeoutMs);
  const signal = o.signal ? AbortSignal.any([o.signal, deadline]) : deadline;
  let told: "approval" | "issuance" | undefined;
  const check = (csr: CertificateSigningRequest): string | undefined => {
    const refused = refusal(csr);
    if (refused) throw refused;
    if (isIssued(csr)) return Buffer.from(csr.status!.certificate!, "base64").toString("utf8");
    const waiting = isApproved(csr) ? "issuance" : "approval";
    if (told !== waiting) {
      told = waiting;
      o.onWaiting?.(waiting, csr);
    }
    return undefined;
  };
  const first = o.created ? check(o.created) : undefined;
  if (first) return first;
  try {
    for (;;) {
      const list = await csrs.list({ fieldSelector: `metadata.name=${name}`, signal });
      const current = list.items[0];
      if (!current) throw new PlatformError("NOT_FOUND", `certificate signing request ${name} no longer exists`);
      const done = check(current);
      if (done) return done;
      // Watch from the list; a stream the server ends (timeoutSeconds) is simply listed and watched again.
      try {
        for await (const event of csrs.watch({ fieldSelector: `metadata.name=${name}`, resourceVersion: list.metadata.resourceVersion, timeoutSeconds: 60, signal })) {
          if (event.type === "DELETED") throw new PlatformError("NOT_FOUND", `certificate signing request ${name} was deleted while waiting`);
          if (event.type !== "ADDED" && event.type !== "MODIFIED") continue;
          const got = check(event.object as CertificateSigningRequest);
          if (got) return got;
        }
      } catch (err) {
        if (!isPlatformError(err, "GONE")) throw err;
      }
    }
  } catch (err) {
    if (deadline.aborted && !(isPlatformError(err) && (err.code === "SIGNER_REJECTED" || err.code === "NOT_FOUND"))) {
      throw new PlatformError("TIMEOUT", `timed out after ${Math.round(o.timeoutMs / 1000)}s waiting for certificate signing request ${name} to be ${told === "issuance" ? "issued" : "approved"}`);
    }
    throw err;
  }
}
