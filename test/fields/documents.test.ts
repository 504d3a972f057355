// Fuzzing every document read through the one field reader: arbitrary content gives a value or one typed error in the one shape.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseConfigFile } from "../../src/client/config-parse.js";
import { controllerManagerApiVersion, CONTROLLER_MANAGER_KIND, parseControllerManagerConfig } from "../../src/config/controller-manager.js";
import { LEADER_MIGRATION_KIND, leaderMigrationApiVersion, parseLeaderMigrationConfig } from "../../src/config/leader-migration.js";
import { parsePkiManifest } from "../../src/config/pki-manifest.js";
import { type ErrorCode, isPlatformError } from "../../src/errors.js";
import { parsePolicy } from "../../signers/policy-schema.js";

/** Values a person might write where a field is expected, durations and near-misses included. */
const fieldValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom("1h30m", "90d", "600", 600, "-1s", "0s", "1.5s", "5m", "soon", "", "*", "10.0.0.0/8", "digital signature", "Custom", "p256"),
);

/** A mapping of (mostly) known keys, one level deep in its values and sometimes two. */
const near = (keys: readonly string[]) =>
  fc.dictionary(fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 6 })), fc.oneof(fieldValue, fc.dictionary(fc.string({ maxLength: 12 }), fieldValue, { maxKeys: 4 })), { maxKeys: 6 });

function outcome(code: ErrorCode, read: () => unknown): void {
  try {
    read();
  } catch (err) {
    if (!isPlatformError(err, code)) throw err;
    for (const cause of err.causes.filter((c) => c.field !== undefined)) expect(cause.message).toMatch(/^(expected|unknown field) `[^`]*`/);
  }
}

const RUNS = { numRuns: 300 };

describe("documents under fuzzing", () => {
  it("controller manager configuration: CONFIG_INVALID or a configuration", () => {
    const header = { apiVersion: controllerManagerApiVersion(), kind: CONTROLLER_MANAGER_KIND };
    const doc = fc.record(
      {
        Generic: near(["Port", "Address", "MinResyncPeriod", "ClientConnection", "LeaderElection", "Controllers", "LeaderMigrationEnabled"]),
        CSRSigningController: near(["ClusterSigningCertFile", "ClusterSigningKeyFile", "ClusterSigningDuration", "KubeletServingSignerConfiguration"]),
        PlatformCAExtensions: near(["ConcurrentCSRSyncs", "CustomSigners", "SignerPlugins", "Approver", "Cleaner"]),
        NodeLifecycleController: near(["NodeEvictionRate", "PodEvictionTimeout", "LargeClusterSizeThreshold"]),
      },
      { requiredKeys: [] },
    );
    fc.assert(fc.property(doc, fc.boolean(), (doc, strict) => outcome("CONFIG_INVALID", () => parseControllerManagerConfig(JSON.stringify({ ...header, ...doc }), "cm.yaml", { strict }))), RUNS);
    fc.assert(fc.property(fc.string(), (text) => outcome("CONFIG_INVALID", () => parseControllerManagerConfig(text, "cm.yaml"))), RUNS);
  });

  it("leader migration configuration: CONFIG_INVALID or a configuration", () => {
    const header = { apiVersion: leaderMigrationApiVersion(), kind: LEADER_MIGRATION_KIND };
    fc.assert(fc.property(near(["leaderName", "resourceLock", "controllerLeaders"]), (doc) => outcome("CONFIG_INVALID", () => parseLeaderMigrationConfig(JSON.stringify({ ...header, ...doc }), "m.yaml"))), RUNS);
  });

  it("signer policy: POLICY_INVALID or a policy", () => {
    const keys = ["signerName", "issuer", "trust", "subject", "subjectAltNames", "extensions", "usages", "lifetime", "caCertificates"];
    fc.assert(fc.property(fc.oneof(near(keys), fc.anything()), (doc) => outcome("POLICY_INVALID", () => parsePolicy(doc))), RUNS);
  });

  it("dev PKI manifest: MANIFEST_INVALID or a manifest", () => {
    const keys = ["version", "groupSuffix", "defaults", "cas", "signers", "certificates"];
    fc.assert(fc.property(near(keys), (doc) => outcome("MANIFEST_INVALID", () => parsePkiManifest(JSON.stringify(doc), "/tmp/pki.yaml"))), RUNS);
  });

  it("client config file: CONFIG_INVALID or the parsed file", () => {
    const entry = (inner: string) => fc.array(fc.record({ name: fieldValue, [inner]: fc.oneof(fieldValue, near(["server", "token", "exec", "as-groups", "client-key-data", "insecure-skip-tls-verify"])) }, { requiredKeys: [] }), { maxLength: 3 });
    const file = fc.record({ apiVersion: fieldValue, kind: fieldValue, clusters: entry("cluster"), users: entry("user"), contexts: entry("context") }, { requiredKeys: [] });
    fc.assert(fc.property(fc.oneof(file, fc.jsonValue()), (doc) => outcome("CONFIG_INVALID", () => parseConfigFile(JSON.stringify(doc) ?? "", "/home/a/config"))), RUNS);
  });
});
