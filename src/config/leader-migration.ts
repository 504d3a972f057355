// LeaderMigrationConfiguration (controllermanager.config.<suffix>/v1alpha1): which component leads which controller during a migration.
import { DEFAULT_GROUP_SUFFIX, groupNames } from "../api/group.js";
import { checkHeader, finish, parseConfigText, readConfigFile, type ConfigLoadOptions } from "./config-document.js";
import { FieldReader, join } from "../fields/reader.js";
import { list, object, oneOf, text, type Value } from "../fields/schema.js";

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
export function validateLeaderMigration(config: LeaderMigrationConfiguration, path: string, r: FieldReader): void {
  if (config.leaderName === "") r.missing(join(path, "leaderName"));
  const seen = new Set<string>();
  config.controllerLeaders.forEach((leader, i) => {
    const at = join(path, `controllerLeaders[${i}]`);
    if (leader.name === "") r.missing(`${at}.name`);
    else if (seen.has(leader.name)) r.problem(`${at}.name`, "a controller not named before", leader.name);
    seen.add(leader.name);
    if (leader.component === "") r.missing(`${at}.component`, 'to be set (a component name, or "*" for any)');
  });
}

export interface LoadedLeaderMigration {
  readonly source: string;
  readonly config: LeaderMigrationConfiguration;
  /** Unknown fields, as ``unknown field `path`; …``; the caller logs them. */
  readonly warnings: readonly string[];
}

export function parseLeaderMigrationConfig(text: string, source: string, options: ConfigLoadOptions = {}): LoadedLeaderMigration {
  const doc = parseConfigText(text, source, WHAT);
  const r = new FieldReader();
  checkHeader(doc, { apiVersion: leaderMigrationApiVersion(options.groupSuffix), kind: LEADER_MIGRATION_KIND }, r);
  const config = leaderMigrationShape.read(doc, "", r);
  validateLeaderMigration(config, "", r);
  const warnings = finish(r, options, WHAT, source);
  return { source, config, warnings };
}

export async function loadLeaderMigrationConfig(path: string, options: ConfigLoadOptions = {}): Promise<LoadedLeaderMigration> {
  return parseLeaderMigrationConfig(await readConfigFile(path, WHAT), path, options);
}
