// Loads PlatformControllerManagerConfiguration: typed, defaulted, cross-checked, with unknown and ignored fields reported.
import { dirname, isAbsolute, resolve } from "node:path";
import { REQUESTER_MATCHES_SUBJECT, ServingApprover, type ServingApprovalPolicy } from "../../signers/serving-approval.js";
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";
import { formatDuration } from "../fields/duration.js";
import { isPkcs11Uri } from "../pki/pkcs11-uri.js";
import { FieldReader } from "../fields/reader.js";
import { validateLeaderMigration } from "./leader-migration.js";
import {
  controllerManagerShape,
  ignoredBlocks,
  type CSRSigningControllerConfiguration,
  type LeaderElectionConfiguration,
  type PlatformControllerManagerConfiguration,
} from "./controller-manager-schema.js";

export * from "./controller-manager-schema.js";

export const CONTROLLER_MANAGER_KIND = "PlatformControllerManagerConfiguration";
const WHAT = "controller manager configuration";

/** The product's controllers, by the names `Generic.Controllers` uses. */
export const KNOWN_CONTROLLERS = ["csrsigning", "csrapproving", "csrcleaner", "clustertrustbundle-publisher", "serviceaccount", "root-ca-cert-publisher", "serviceaccount-token", "tokencleaner", "bootstrapsigner", "clusterrole-aggregation"] as const;
/** Acquire attempts are jittered by up to 1.2 × retryPeriod, so the renew deadline must leave room for one. */
const RETRY_JITTER = 1.2;
const CONTROLLER_ENTRY_RE = /^-?[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function controllerManagerApiVersion(groupSuffix: string = DEFAULT_GROUP_SUFFIX): string {
  return `platformcontrollermanager.config.${groupNames(groupSuffix).suffix}/v1alpha1`;
}

export interface SigningFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface ControllerManagerLoadOptions extends ConfigLoadOptions {
  /** Relative file paths in the document are resolved against this (default: the file's directory, or the working directory). */
  readonly baseDir?: string;
  /** Controller names `Generic.Controllers` may use without a warning (default KNOWN_CONTROLLERS). */
  readonly knownControllers?: readonly string[];
}

export interface LoadedControllerManagerConfig {
  readonly source: string;
  readonly config: PlatformControllerManagerConfiguration;
  /** CA files per built-in signer name (from the cluster pair, or the per-signer blocks that are set). */
  readonly signingFiles: ReadonlyMap<string, SigningFiles>;
  /** Unknown fields and unknown controller names, for the caller to log. */
  readonly warnings: readonly string[];
  /** Blocks of the file the product accepts but does not act on, for the caller to log. */
  readonly ignored: readonly string[];
  /** Whether the file itself sets `Generic.Address` (the schema's default binds every address; callers may prefer loopback). */
  readonly addressSet: boolean;
}

/**
 * Whether controller `name` runs under `controllers` (`*` = every default-enabled controller, `name`, `-name`):
 * the first entry naming it wins; without one, `*` enables it unless it is disabled by default.
 */
export function isControllerEnabled(name: string, controllers: readonly string[], disabledByDefault: readonly string[] = []): boolean {
  let star = false;
  for (const entry of controllers) {
    if (entry === name) return true;
    if (entry === `-${name}`) return false;
    if (entry === "*") star = true;
  }
  return star && !disabledByDefault.includes(name);
}

export function parseControllerManagerConfig(text: string, source: string, options: ControllerManagerLoadOptions = {}): LoadedControllerManagerConfig {
  const doc = parseConfigText(text, source, WHAT);
  const r = new FieldReader();
  checkHeader(doc, { apiVersion: controllerManagerApiVersion(options.groupSuffix), kind: CONTROLLER_MANAGER_KIND }, r);
  const config = controllerManagerShape.read(doc, "", r);
  const base = options.baseDir ?? process.cwd();
  resolvePaths(config, base);
  const generic = config.Generic;
  // As upstream: an empty list means the default, every default-enabled controller.
  if (generic.Controllers.length === 0) generic.Controllers = ["*"];
  if (generic.LeaderElection.leaderElect) checkLeaderElection(generic.LeaderElection, "Generic.LeaderElection", r);
  if (generic.ClientConnection.qps > 0 && generic.ClientConnection.burst < 1) {
    r.problem("Generic.ClientConnection.burst", "at least 1 when qps is positive", generic.ClientConnection.burst);
  }
  const extraWarnings = checkControllers(generic.Controllers, options.knownControllers ?? KNOWN_CONTROLLERS, r);
  if (generic.LeaderMigrationEnabled) validateLeaderMigration(generic.LeaderMigration, "Generic.LeaderMigration", r);
  const signingFiles = checkSigning(config.CSRSigningController, options.groupSuffix ?? DEFAULT_GROUP_SUFFIX, r);
  checkExtensions(config, r);
  const warnings = [...finish(r, options, WHAT, source), ...extraWarnings];
  const ignored = Object.keys(ignoredBlocks).filter((block) => doc[block] !== undefined && doc[block] !== null);
  const genericDoc = doc["Generic"];
  const addressSet = typeof genericDoc === "object" && genericDoc !== null && typeof (genericDoc as Record<string, unknown>)["Address"] === "string";
  return { source, config, signingFiles, warnings, ignored, addressSet };
}

export async function loadControllerManagerConfig(path: string, options: ControllerManagerLoadOptions = {}): Promise<LoadedControllerManagerConfig> {
  const text = await readConfigFile(path, WHAT);
  return parseControllerManagerConfig(text, path, { ...options, baseDir: options.baseDir ?? dirname(resolve(path)) });
}

/** All positive, renewDeadline ≤ leaseDuration, room for a jittered retry inside renewDeadline, a lock we implement. */
function checkLeaderElection(le: LeaderElectionConfiguration, path: string, r: FieldReader): void {
  for (const field of ["leaseDuration", "renewDeadline", "retryPeriod"] as const) {
    if (le[field] <= 0) r.problem(`${path}.${field}`, "a duration greater than 0", formatDuration(le[field]));
  }
  if (le.renewDeadline > le.leaseDuration) {
    r.problem(`${path}.renewDeadline`, `at most leaseDuration (${formatDuration(le.leaseDuration)})`, formatDuration(le.renewDeadline));
  } else if (le.retryPeriod > 0 && le.renewDeadline <= RETRY_JITTER * le.retryPeriod) {
    r.problem(`${path}.retryPeriod`, `less than renewDeadline / ${RETRY_JITTER} (${formatDuration(le.renewDeadline / RETRY_JITTER)})`, formatDuration(le.retryPeriod));
  }
  if (le.resourceLock !== "leases") r.problem(`${path}.resourceLock`, '"leases"', le.resourceLock);
  if (le.resourceName === "") r.missing(`${path}.resourceName`, "to be set when leaderElect is true");
  if (le.resourceNamespace === "") r.missing(`${path}.resourceNamespace`, "to be set when leaderElect is true");
}

/** Entry syntax is an error; a well-formed name of a controller we do not have is a warning (it changes nothing). */
function checkControllers(controllers: readonly string[], known: readonly string[], r: FieldReader): string[] {
  const warnings: string[] = [];
  controllers.forEach((entry, i) => {
    const path = `Generic.Controllers[${i}]`;
    if (entry === "*") return;
    if (!CONTROLLER_ENTRY_RE.test(entry)) return r.problem(path, '"*", a controller name or "-name"', entry);
    const name = entry.replace(/^-/, "");
    if (!known.includes(name)) warnings.push(`${path}: unknown controller ${JSON.stringify(name)} (known: ${known.join(", ")})`);
  });
  return warnings;
}

/** The seed's signer blocks, mapped to our built-in signers. */
const SIGNER_BLOCKS = [
  ["KubeletServingSignerConfiguration", "nodeagentServing"],
  ["KubeletClientSignerConfiguration", "nodeagentClient"],
  ["KubeAPIServerClientSignerConfiguration", "apiserverClient"],
  ["LegacyUnknownSignerConfiguration", "legacyUnknown"],
] as const;

function checkSigning(signing: CSRSigningControllerConfiguration, suffix: string, r: FieldReader): Map<string, SigningFiles> {
  const path = "CSRSigningController";
  const names = groupNames(suffix).signers;
  const files = new Map<string, SigningFiles>();
  const pair = (cert: string, key: string, at: string, certField: string, keyField: string): boolean => {
    if (cert !== "" && key === "") r.missing(`${at}.${keyField}`, `to be set when ${certField} is set`);
    if (key !== "" && cert === "") r.missing(`${at}.${certField}`, `to be set when ${keyField} is set`);
    return cert !== "" && key !== "";
  };
  const cluster = pair(signing.ClusterSigningCertFile, signing.ClusterSigningKeyFile, path, "ClusterSigningCertFile", "ClusterSigningKeyFile");
  const perSigner = SIGNER_BLOCKS.filter(([block]) => signing[block].CertFile !== "" || signing[block].KeyFile !== "");
  if ((cluster || signing.ClusterSigningCertFile !== "" || signing.ClusterSigningKeyFile !== "") && perSigner.length > 0) {
    r.problem(path, "either ClusterSigningCertFile/ClusterSigningKeyFile or per-signer blocks, not both", perSigner.map(([b]) => b).join(", "));
  } else if (cluster) {
    for (const [, signer] of SIGNER_BLOCKS) files.set(names[signer], { certFile: signing.ClusterSigningCertFile, keyFile: signing.ClusterSigningKeyFile });
  } else {
    for (const [block, signer] of perSigner) {
      const { CertFile, KeyFile } = signing[block];
      if (pair(CertFile, KeyFile, `${path}.${block}`, "CertFile", "KeyFile")) files.set(names[signer], { certFile: CertFile, keyFile: KeyFile });
    }
  }
  if (signing.ClusterSigningDuration < 1000) {
    r.problem(`${path}.ClusterSigningDuration`, "a duration of at least 1s", formatDuration(signing.ClusterSigningDuration));
  }
  return files;
}

function checkExtensions(config: PlatformControllerManagerConfiguration, r: FieldReader): void {
  const ext = config.PlatformCAExtensions;
  ext.CustomSigners.forEach((s, i) => {
    if (s.policyFile === "") r.missing(`PlatformCAExtensions.CustomSigners[${i}].policyFile`);
  });
  ext.SignerPlugins.forEach((p, i) => {
    if (p.module === "") r.missing(`PlatformCAExtensions.SignerPlugins[${i}].module`);
  });
  const crlUrl = ext.CRLDistributionPointURL;
  if (crlUrl !== "" && !/^https?:\/\/[\x21-\x7e]+$/.test(crlUrl)) {
    r.problem("PlatformCAExtensions.CRLDistributionPointURL", "an http or https URL of printable ASCII", crlUrl);
  }
  if (ext.Cleaner.Period <= 0) r.problem("PlatformCAExtensions.Cleaner.Period", "a duration greater than 0", "0s");
  checkServingPolicy(ext.Approver, r);
}

/** The Custom serving policy must say what it allows; its patterns, CIDRs and lifetime must be usable. */
function checkServingPolicy(approver: PlatformControllerManagerConfiguration["PlatformCAExtensions"]["Approver"], r: FieldReader): void {
  const path = "PlatformCAExtensions.Approver.Serving";
  const serving = approver.Serving;
  if (approver.ServingPolicy !== "Custom") {
    const set = serving.DNSPatterns.length > 0 || serving.IPCIDRs.length > 0 || serving.MaxDuration !== 0;
    if (set) r.problem(path, `only with ServingPolicy: Custom (ServingPolicy is ${approver.ServingPolicy})`, serving);
    return;
  }
  if (serving.DNSPatterns.length === 0 && serving.IPCIDRs.length === 0) {
    r.problem(path, "DNSPatterns or IPCIDRs under ServingPolicy Custom (what a serving certificate may name)", serving);
    return;
  }
  try {
    new ServingApprover(servingPolicyOf(approver)!);
  } catch (err) {
    // The approver names its option (`servingApproval.ipCidrs`) in the one message shape; name the file's field instead.
    const message = (err as Error).message;
    const [option, key] = SERVING_OPTIONS.find(([o]) => message.includes(`\`${o}\``)) ?? [];
    if (option && key) r.errors.push({ field: `${path}.${key}`, message: message.replace(option, `${path}.${key}`), reason: "FieldValueInvalid" });
    else r.problem(path, `a usable Custom policy (${message})`, serving);
  }
}

/** The approver's option names and the Serving fields they come from. */
const SERVING_OPTIONS = [
  ["servingApproval.dnsPatterns", "DNSPatterns"],
  ["servingApproval.ipCidrs", "IPCIDRs"],
  ["servingApproval.maxExpirationSeconds", "MaxDuration"],
] as const;

/** The serving approval policy a configuration asks for; undefined for Manual. */
export function servingPolicyOf(approver: PlatformControllerManagerConfiguration["PlatformCAExtensions"]["Approver"]): ServingApprovalPolicy | undefined {
  if (approver.ServingPolicy === "RequesterMatchesSubject") return REQUESTER_MATCHES_SUBJECT;
  if (approver.ServingPolicy !== "Custom") return undefined;
  const s = approver.Serving;
  return {
    dnsPatterns: s.DNSPatterns,
    ipCidrs: s.IPCIDRs,
    ...(s.MaxDuration > 0 && { maxExpirationSeconds: Math.floor(s.MaxDuration / 1000) }),
    usernameMustMatchCn: s.UsernameMustMatchCN,
  };
}

/** File paths in the document are relative to the document, not to wherever the process was started. */
function resolvePaths(config: PlatformControllerManagerConfiguration, base: string): void {
  const abs = (p: string): string => (p === "" || isAbsolute(p) ? p : resolve(base, p));
  // A key may be a pkcs11: URI naming it in a token instead of a file.
  const key = (p: string): string => (isPkcs11Uri(p) ? p : abs(p));
  const signing = config.CSRSigningController;
  signing.ClusterSigningCertFile = abs(signing.ClusterSigningCertFile);
  signing.ClusterSigningKeyFile = key(signing.ClusterSigningKeyFile);
  for (const [block] of SIGNER_BLOCKS) {
    signing[block].CertFile = abs(signing[block].CertFile);
    signing[block].KeyFile = key(signing[block].KeyFile);
  }
  config.Generic.ClientConnection.kubeconfig = abs(config.Generic.ClientConnection.kubeconfig);
  config.SAController.RootCAFile = abs(config.SAController.RootCAFile);
  config.SAController.ServiceAccountKeyFile = abs(config.SAController.ServiceAccountKeyFile);
  for (const s of config.PlatformCAExtensions.CustomSigners) s.policyFile = abs(s.policyFile);
  // Plug-in modules are paths only when they look like one; bare names stay package names.
  for (const p of config.PlatformCAExtensions.SignerPlugins) if (p.module.startsWith(".")) p.module = abs(p.module);
}
