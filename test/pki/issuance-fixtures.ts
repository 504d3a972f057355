// Shared builders for the issuance tests: the fixed instant, profiles and external tool runners.
import { execFileSync, spawnSync } from "node:child_process";
import { resolveUsages } from "../../src/pki/usages.js";
import type { CertificateProfile } from "../../src/pki/types.js";

/** A fixed instant every test clock starts from. */
export const T0 = new Date("2030-01-01T00:00:00Z");

export interface ProfileOptions {
  readonly usages?: readonly string[];
  readonly isCa?: boolean;
  readonly pathLen?: number;
  readonly includeSans?: boolean;
  readonly copyExtensions?: readonly string[];
}

/** A profile from seed usage strings; defaults to a client certificate with SANs copied. */
export function profile(o: ProfileOptions = {}): CertificateProfile {
  return {
    usages: resolveUsages(o.usages ?? ["digital signature", "key encipherment", "client auth"]),
    isCa: o.isCa ?? false,
    ...(o.pathLen !== undefined && { pathLen: o.pathLen }),
    includeSans: o.includeSans ?? true,
    ...(o.copyExtensions && { copyExtensions: o.copyExtensions }),
  };
}


/** Runs a tool and returns stdout; throws with stderr on a non-zero exit. */
export function run(cmd: string, args: readonly string[], input?: string | Uint8Array): string {
  return execFileSync(cmd, args, { input, stdio: ["pipe", "pipe", "pipe"], timeout: 20_000 }).toString();
}

/** Runs a tool and reports exit status and output without throwing. */
export function tryRun(cmd: string, args: readonly string[], input?: string): { status: number | null; out: string } {
  const r = spawnSync(cmd, args, { input, timeout: 20_000 });
  return { status: r.status, out: `${r.stdout?.toString() ?? ""}${r.stderr?.toString() ?? ""}` };
}

/** `openssl x509 -text` of a PEM certificate. */
export function opensslText(pem: string): string {
  return run("openssl", ["x509", "-noout", "-text"], pem);
}
