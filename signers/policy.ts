// Loads signer policy files: YAML read strictly, validated once, relative paths and trust files resolved.
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { parseDocument } from "yaml";
import { PlatformError } from "../src/errors.js";
import { documentError, fieldMessage, Shown } from "../src/fields/reader.js";
import { YAML_READ, plainYamlValue } from "../src/plain-data.js";
import { readCertificateFacts } from "../src/pki/ca.js";
import type { CaSource } from "../src/pki/ca-source.js";
import { decodePem, encodePem, type PemBlock } from "../src/pki/pem.js";
import { openCaSource } from "./ca-files.js";
import type { CaBackingOptions, CaInput } from "./ca-backing.js";
import type { CaSigner } from "./ca-signer.js";
import { parsePolicy, type ParsePolicyOptions, type SignerPolicy } from "./policy-schema.js";
import { createPolicySigner } from "./policy-signer.js";

export const POLICY_MAX_BYTES = 1024 * 1024;

/** Parses policy YAML (or JSON) text; duplicate keys, aliases bombs and syntax errors are POLICY_INVALID. */
export function parsePolicyText(text: string, options: ParsePolicyOptions = {}): SignerPolicy {
  const where = options.source ?? "signer policy";
  if (text.length > POLICY_MAX_BYTES) throw new PlatformError("POLICY_INVALID", `${where} is larger than ${POLICY_MAX_BYTES} bytes`);
  const doc = parseDocument(text, { ...YAML_READ, uniqueKeys: true, prettyErrors: true });
  const error = doc.errors[0];
  if (error) throw new PlatformError("POLICY_INVALID", `${where} is not valid YAML: ${error.message.split("\n")[0]}`, { cause: error });
  let value: unknown;
  try {
    value = plainYamlValue(doc);
  } catch (err) {
    throw new PlatformError("POLICY_INVALID", `${where} cannot be read: ${(err as Error).message}`, { cause: err });
  }
  return parsePolicy(value, options);
}

/** Reads a policy file; relative paths in it are relative to the file, and trust files are read and checked. */
export async function loadPolicyFile(path: string): Promise<SignerPolicy> {
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new PlatformError("POLICY_INVALID", `cannot read policy file ${file}: ${(err as Error).message}`, { cause: err });
  }
  const policy = parsePolicyText(text, { source: file, baseDir: dirname(file) });
  if (policy.trust.publish !== "files") return policy;
  const pems = await Promise.all(policy.trust.files.map((f, i) => readAnchors(f, `trust.files[${i}]`, file)));
  return { ...policy, trust: { ...policy.trust, pems: pems.flat() } };
}

/** The CA certificates in one trust file, re-encoded so block headers and surrounding text are dropped. */
async function readAnchors(file: string, field: string, source: string): Promise<string[]> {
  const fail = (problem: string, cause?: unknown): PlatformError => {
    const message = fieldMessage(field, "a PEM file of CA certificates", new Shown(`${file}: ${problem}`));
    const error = documentError("POLICY_INVALID", `signer policy ${source}`, [{ field, message, reason: "FieldValueInvalid" }]);
    return cause === undefined ? error : new PlatformError(error.code, error.message, { causes: error.causes, cause });
  };
  let text: string;
  try {
    text = await readFile(file, "latin1");
  } catch (err) {
    throw fail(`cannot be read: ${(err as Error).message}`, err);
  }
  let blocks: PemBlock[];
  try {
    blocks = decodePem(text, { label: "CERTIFICATE" });
  } catch (err) {
    throw fail((err as Error).message, err);
  }
  return blocks.map((block) => {
    let isCa: boolean;
    try {
      isCa = readCertificateFacts(block.der).isCa;
    } catch (err) {
      throw fail(`certificate ${block.index + 1} cannot be parsed: ${(err as Error).message}`, err);
    }
    if (!isCa) throw fail(`certificate ${block.index + 1} is not a CA certificate (BasicConstraints CA=true), so it cannot be a trust anchor`);
    return encodePem("CERTIFICATE", block.der);
  });
}

export interface LoadPolicySignerOptions extends Omit<CaBackingOptions, "ca"> {
  /** The CA to issue from; default a CaSource over the policy's issuer files. */
  readonly ca?: CaInput;
}

export interface LoadedPolicySigner {
  readonly policy: SignerPolicy;
  readonly signer: CaSigner;
  /** The CaSource over the issuer files (loaded once; start() it to poll); undefined when options.ca was given. */
  readonly caSource?: CaSource;
}

/** Loads a policy file and builds its signer over the issuer files (certificate file may carry intermediates). */
export async function loadPolicySigner(path: string, options: LoadPolicySignerOptions = {}): Promise<LoadedPolicySigner> {
  const policy = await loadPolicyFile(path);
  const { ca, ...rest } = options;
  if (ca !== undefined) return { policy, signer: createPolicySigner(policy, { ...rest, ca }) };
  if (policy.issuer === undefined) {
    const message = fieldMessage("issuer", "certFile and keyFile when no CA is given to the loader", undefined);
    throw documentError("POLICY_INVALID", `signer policy ${resolve(path)}`, [{ field: "issuer", message, reason: "FieldValueRequired" }]);
  }
  const caSource = await openCaSource(policy.issuer, options);
  return { policy, signer: createPolicySigner(policy, { ...rest, ca: caSource }), caSource };
}
