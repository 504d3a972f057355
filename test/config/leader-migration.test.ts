import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { leaderMigrationApiVersion, loadLeaderMigrationConfig, parseLeaderMigrationConfig } from "../../src/config/leader-migration.js";
import { isPlatformError } from "../../src/errors.js";
import { tempDir } from "../fixtures/temp-dir.js";

type Raw = Record<string, unknown>;

function migration(fields: Raw = {}, header: Raw = {}): string {
  return stringify({
    apiVersion: "controllermanager.config.platform.io/v1alpha1",
    kind: "LeaderMigrationConfiguration",
    leaderName: "platform-ca-migration",
    controllerLeaders: [{ name: "csrsigning", component: "platform-controller-manager" }],
    ...header,
    ...fields,
  });
}

function problems(text: string, options = {}): string[] {
  try {
    parseLeaderMigrationConfig(text, "mig.yaml", options);
  } catch (err) {
    if (isPlatformError(err, "CONFIG_INVALID")) return err.causes.map((c) => c.message);
    throw err;
  }
  throw new Error("configuration was accepted");
}

describe("parseLeaderMigrationConfig", () => {
  it("reads a valid document with resourceLock defaulting to leases", () => {
    const { config, warnings } = parseLeaderMigrationConfig(migration(), "mig.yaml");
    expect(config).toEqual({ leaderName: "platform-ca-migration", resourceLock: "leases", controllerLeaders: [{ name: "csrsigning", component: "platform-controller-manager" }] });
    expect(warnings).toEqual([]);
  });

  it("accepts the example of docs/configuration.md", () => {
    const text = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
    const example = /```yaml\n(apiVersion: controllermanager[\s\S]*?)```/.exec(text)![1]!;
    expect(parseLeaderMigrationConfig(example, "docs", { strict: true }).config.controllerLeaders).toHaveLength(2);
  });

  it.each([
    ["a missing leaderName", { leaderName: "" }, ["expected `leaderName` to be set, got nothing"]],
    ["an unsupported lock", { resourceLock: "configmaps" }, ["expected `resourceLock` one of leases, endpoints, got \"configmaps\""]],
    ["a controller named twice", { controllerLeaders: [{ name: "a", component: "x" }, { name: "a", component: "*" }] }, ['expected `controllerLeaders[1].name` a controller not named before, got "a"']],
    ["a leader without component", { controllerLeaders: [{ name: "a" }] }, ['expected `controllerLeaders[0].component` to be set (a component name, or "*" for any), got nothing']],
    ["a leader without name", { controllerLeaders: [{ component: "*" }] }, ["expected `controllerLeaders[0].name` to be set, got nothing"]],
  ])("refuses %s", (_name, fields, expected) => {
    expect(problems(migration(fields))).toEqual(expected);
  });

  it("checks the header against the group suffix", () => {
    expect(leaderMigrationApiVersion("k8s.io")).toBe("controllermanager.config.k8s.io/v1alpha1");
    expect(problems(migration({}, { kind: "LeaderMigration" }))).toEqual(['expected `kind` "LeaderMigrationConfiguration", got "LeaderMigration"']);
    expect(problems(migration(), { groupSuffix: "k8s.io" })).toEqual(['expected `apiVersion` "controllermanager.config.k8s.io/v1alpha1", got "controllermanager.config.platform.io/v1alpha1"']);
  });

  it("warns about unknown fields, or refuses them when strict", () => {
    expect(parseLeaderMigrationConfig(migration({ LeaderName: "x" }), "mig.yaml").warnings).toEqual(["unknown field `LeaderName`; did you mean `leaderName`?"]);
    expect(problems(migration({ extra: 1 }), { strict: true })).toEqual(["unknown field `extra`; known fields: leaderName, resourceLock, controllerLeaders, apiVersion, kind"]);
  });
});

describe("loadLeaderMigrationConfig", () => {
  const dir = tempDir("lm-config-");

  it("reads the file and names it in errors", async () => {
    const path = join(dir, "mig.yaml");
    writeFileSync(path, migration({ leaderName: "" }));
    await expect(loadLeaderMigrationConfig(path)).rejects.toMatchObject({ code: "CONFIG_INVALID", message: `invalid leader migration configuration ${path}: expected \`leaderName\` to be set, got nothing` });
    writeFileSync(path, migration());
    expect((await loadLeaderMigrationConfig(path)).config.leaderName).toBe("platform-ca-migration");
  });
});
