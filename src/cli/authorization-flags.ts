// The authorization flag of `apiserver` and `up` (upstream's name): the AuthorizationConfiguration file, checked before anything starts.
import { resolve } from "node:path";
import type { Command } from "commander";
import { groupNames } from "../api/group.js";
import { buildAuthorizerChain } from "../apiserver/auth/authz-chain.js";
import type { AuthorizationSettings } from "../apiserver/bootstrap/auth.js";
import { loadAuthorizationConfig } from "../config/authorization-config.js";
import { systemClock } from "../time/clock.js";

export interface AuthorizationFlags {
  readonly authorizationConfig?: string;
}

export function addAuthorizationOptions(command: Command): Command {
  return command.option("--authorization-config <file>", "AuthorizationConfiguration (apiserver.config.<group-suffix>/v1): the authorizer chain (RBAC, Webhook), reloaded when it changes (docs/authorization.md)");
}

/** The file read and checked (its webhooks' client config files exist): a bad one fails here, before the data directory is touched. */
export async function readAuthorizationSettings(flags: AuthorizationFlags, groupSuffix: string): Promise<AuthorizationSettings | undefined> {
  if (flags.authorizationConfig === undefined) return undefined;
  // Absolute, so a reload reads the same file whatever the working directory becomes.
  const file = resolve(flags.authorizationConfig);
  const config = await loadAuthorizationConfig(file, { groupSuffix });
  // Built once and dropped: a webhook's unusable client config file fails here too, not after the store is opened.
  const trial = await buildAuthorizerChain(config, { rbac: { authorize: () => ({ allowed: false, reason: "", evaluationErrors: [] }) }, names: groupNames(groupSuffix), clock: systemClock });
  trial.close();
  return { file, config };
}
