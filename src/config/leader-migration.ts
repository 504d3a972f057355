// LeaderMigrationConfiguration (controllermanager.config.<suffix>/v1alpha1): which component leads which controller during a migration.
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";
import { fail, join, list, object, oneOf, text, type ReadContext, type Value } from "./fields.js";

export const LEADER_MIGRATION_KIND = "LeaderMigrationConfiguration";
export const LEADER_MIGRATION_LOCKS = ["leases", "endpoints"] as const;
const WHAT = "leader migration configuration";

export function leaderMigrationApiVersion(groupSuffix: string = DEFAULT_GROUP_SUFFIX): string {
  // groupNames validates the suffix; the controller-manager groups are not among its named groups.
  return `controllermanager.config.${groupNames(groupSuffix).suffix}/v1alpha1`;
}

/** The block's fields; apiVersion and kind are allowed too because the block may be a whole document. */
export const leaderMigrationShape = object(
  {
    leaderName: text(),
    resourceLock: oneOf(LEADER_MIGRATION_LOCKS, "leases"),
    controllerLeaders: list(object({ name: text(), component: text() })),
  },
  ["apiVersion", "kind"],
);

export type LeaderMigrationConfiguration = Value<typeof leaderMigrationShape>;

/** leaderName required; every controller named once with a component (`*` for any component). */
export function validateLeaderMigration(config: LeaderMigrationConfiguration, path: string, ctx: ReadContext): void {
  if (config.leaderName === "") fail(ctx, join(path, "leaderName"), "required");
  const seen = new Set<string>();
  config.controllerLeaders.forEach((leader, i) => {
    const at = join(path, `controllerLeaders[${i}]`);
    if (leader.name === "") fail(ctx, `${at}.name`, "required");
    else if (seen.has(leader.name)) fail(ctx, `${at}.name`, `duplicate controller ${JSON.stringify(leader.name)}`);
    seen.add(leader.name);
    if (leader.component === "") fail(ctx, `${at}.component`, 'required (a component name, or "*" for any)');
  });
}

export interface LoadedLeaderMigration {
  readonly source: string;
  readonly config: LeaderMigrationConfiguration;
  /** Unknown fields, as `path: unknown field`; the caller logs them. */
  readonly warnings: readonly string[];
}

export function parseLeaderMigrationConfig(text: string, source: string, options: ConfigLoadOptions = {}): LoadedLeaderMigration {
  const doc = parseConfigText(text, source, WHAT);
  const ctx: ReadContext = { errors: [], unknown: [] };
  checkHeader(doc, { apiVersion: leaderMigrationApiVersion(options.groupSuffix), kind: LEADER_MIGRATION_KIND }, ctx);
  const config = leaderMigrationShape.read(doc, "", ctx);
  validateLeaderMigration(config, "", ctx);
  const warnings = finish(ctx, options, WHAT, source);
  return { source, config, warnings };
}

export async function loadLeaderMigrationConfig(path: string, options: ConfigLoadOptions = {}): Promise<LoadedLeaderMigration> {
  return parseLeaderMigrationConfig(await readConfigFile(path, WHAT), path, options);
}
