// Signer plug-ins: a module loaded by path that exports a Signer or a createSigner(context) factory.
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { DEFAULT_GROUP_SUFFIX } from "../src/api/group.js";
import { namingProfile } from "../src/api/naming-profile.js";
import { PlatformError, toPlatformError } from "../src/errors.js";
import { silentLogger, type Logger } from "../src/logger.js";
import { resolveKeyRef } from "../src/pki/pkcs11-uri.js";
import { openCaSource } from "./ca-files.js";
import { DEFAULT_MAX_DURATION_SECONDS, type CaInput } from "./ca-backing.js";
import type { Signer, SignOptions, SigningRequest, Validation } from "./signer.js";
import { signerNameProblem } from "./signer-name.js";

/** What a plug-in's createSigner receives. */
export interface SignerPluginContext {
  readonly groupSuffix: string;
  /** Domain of the suffix's well-known names (`kubernetes.io` under `k8s.io`, else the suffix), for names beside the built-ins'. */
  readonly namesDomain: string;
  /** Cluster maximum certificate lifetime in seconds. */
  readonly maxDurationSeconds: number;
  readonly logger: Logger;
  readonly now: () => Date;
  /** Loads a CA from certificate and key files; relative paths are relative to the base directory. */
  readonly loadCa: (files: { readonly certFile: string; readonly keyFile: string }) => Promise<CaInput>;
  /** Settings for this plug-in from the configuration. */
  readonly options: Readonly<Record<string, unknown>>;
}

export interface LoadSignerPluginOptions extends Partial<SignerPluginContext> {
  /** Directory a relative module path (and relative CA files) resolve against; default the working directory. */
  readonly baseDir?: string;
}

const MEMBERS = ["validate", "sign", "trustAnchors", "ready"] as const;

/** Imports `modulePath` and returns the Signer it exports (`createSigner(context)`, else `signer`, else `default`). */
export async function loadSignerPlugin(modulePath: string, options: LoadSignerPluginOptions = {}): Promise<Signer> {
  if (typeof modulePath !== "string" || modulePath.length === 0) {
    throw new PlatformError("PLUGIN_INVALID", `a signer plug-in needs a module path, got ${JSON.stringify(modulePath)}`);
  }
  const baseDir = options.baseDir ?? process.cwd();
  const file = isAbsolute(modulePath) ? modulePath : resolve(baseDir, modulePath);
  const fail = (message: string, cause?: unknown): PlatformError =>
    new PlatformError("PLUGIN_INVALID", `signer plug-in ${file}: ${message}`, { cause, details: { module: file } });

  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw fail(`cannot be loaded: ${(error as Error).message}`, error);
  }
  let candidate: unknown;
  let origin: string;
  if (typeof module.createSigner === "function") {
    origin = "createSigner(context)";
    try {
      candidate = await module.createSigner(contextFrom(options, baseDir));
    } catch (error) {
      throw fail(`createSigner failed: ${(error as Error).message}`, error);
    }
  } else if (module.signer !== undefined || module.default !== undefined) {
    origin = module.signer !== undefined ? 'export "signer"' : "the default export";
    candidate = module.signer ?? module.default;
  } else {
    throw fail('exports neither createSigner(context), "signer" nor a default Signer');
  }
  const problem = signerShapeProblem(candidate);
  if (problem) throw fail(`${origin} is not a Signer: ${problem}`);
  return guarded(candidate as Signer, file);
}

function contextFrom(options: LoadSignerPluginOptions, baseDir: string): SignerPluginContext {
  const logger = options.logger ?? silentLogger();
  const now = options.now ?? (() => new Date());
  const loadCa = async (files: { readonly certFile: string; readonly keyFile: string }): Promise<CaInput> =>
    openCaSource({ certFile: resolve(baseDir, files.certFile), keyFile: resolveKeyRef(baseDir, files.keyFile) }, { now, logger });
  const groupSuffix = options.groupSuffix ?? DEFAULT_GROUP_SUFFIX;
  return {
    groupSuffix,
    namesDomain: options.namesDomain ?? namingProfile(groupSuffix).domain,
    maxDurationSeconds: options.maxDurationSeconds ?? DEFAULT_MAX_DURATION_SECONDS,
    logger,
    now,
    loadCa: options.loadCa ?? loadCa,
    options: options.options ?? {},
  };
}

/** What is wrong with a value that should be a Signer, or undefined. */
export function signerShapeProblem(value: unknown): string | undefined {
  if (value === null || typeof value !== "object") return `expected an object, got ${value === null ? "null" : typeof value}`;
  const signer = value as Record<string, unknown>;
  const missing = MEMBERS.filter((m) => typeof signer[m] !== "function");
  if (missing.length > 0) return `missing ${missing.map((m) => `${m}()`).join(", ")}`;
  return signerNameProblem(signer.signerName);
}

// A plug-in is foreign code: whatever it throws reaches the controller as a PlatformError naming the plug-in.
function guarded(signer: Signer, file: string): Signer {
  const wrap = (error: unknown): PlatformError =>
    error instanceof PlatformError ? error : toPlatformError(new Error(`signer plug-in ${file}: ${(error as Error)?.message ?? String(error)}`, { cause: error }));
  return {
    signerName: signer.signerName,
    validate(request: SigningRequest): Validation {
      try {
        return signer.validate(request);
      } catch (error) {
        throw wrap(error);
      }
    },
    async sign(request: SigningRequest, now: Date, options?: SignOptions): Promise<string> {
      try {
        return await signer.sign(request, now, options);
      } catch (error) {
        throw wrap(error);
      }
    },
    trustAnchors: () => signer.trustAnchors(),
    ready: () => signer.ready(),
  };
}
