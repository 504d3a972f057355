// Which client config platformctl reads (kubectl's --kubeconfig and KUBECONFIG accepted too) and what it says when there is none.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { CONFIG_ENV, DEFAULT_CONFIG_PATH } from "../../client/config-file.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import type { GlobalFlags } from "./global-options.js";

type Env = Readonly<Record<string, string | undefined>>;

/** Where `platform-ca up` writes admin.conf by default (its --data-dir default, .platform, and admin.conf). */
export const UP_ADMIN_CONFIG = join(".platform", "admin.conf");

/** `--platformconfig`, else its kubectl spelling `--kubeconfig`. */
export function configFlag(flags: Pick<GlobalFlags, "platformconfig" | "kubeconfig">): string | undefined {
  return flags.platformconfig ?? flags.kubeconfig;
}

/**
 * The environment the client config is looked up in: KUBECONFIG stands in for PLATFORMCONFIG when that is unset and
 * ~/.platform/config does not exist, so a kubectl user's habit works without turning a platformctl set-up to it.
 */
export function configEnv(env: Env): Env {
  if (env[CONFIG_ENV]?.trim() || !env.KUBECONFIG?.trim()) return env;
  if (existsSync(join(env.HOME || homedir(), ...DEFAULT_CONFIG_PATH))) return env;
  return { ...env, [CONFIG_ENV]: env.KUBECONFIG };
}

/** A missing server address, told how to point platformctl at a client config (and at admin.conf when it is here). */
export function withConfigHint(err: unknown, cwd = process.cwd()): unknown {
  if (!isPlatformError(err, "CONFIG_INVALID") || err.details.missing !== "server") return err;
  const here = existsSync(join(cwd, UP_ADMIN_CONFIG)) ? `; ${UP_ADMIN_CONFIG} is here: platformctl --platformconfig ${UP_ADMIN_CONFIG} get csr` : "";
  return new PlatformError(
    "CONFIG_INVALID",
    `${err.message}. Name a client config with --platformconfig FILE (or --kubeconfig FILE) or the PLATFORMCONFIG (or KUBECONFIG) environment variable; \`platform-ca up\` writes one to DATA-DIR/admin.conf (${UP_ADMIN_CONFIG} by default)${here}`,
    { cause: err, details: err.details },
  );
}
