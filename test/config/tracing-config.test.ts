import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { loadTracingConfig, parseTracingConfig, tracingApiVersions } from "../../src/config/tracing-config.js";
import { isPlatformError } from "../../src/errors.js";
import { tempDir, tempFile } from "../fixtures/temp-dir.js";

const doc = (fields: Record<string, unknown> = {}) => stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "TracingConfiguration", ...fields });

function problems(text: string, options = {}): string[] {
  try {
    parseTracingConfig(text, "tracing.yaml", options);
  } catch (err) {
    if (isPlatformError(err, "CONFIG_INVALID")) return err.causes.map((c) => c.message);
    throw err;
  }
  throw new Error("configuration was accepted");
}

describe("parseTracingConfig", () => {
  it("defaults to the standard collector address and no root sampling", () => {
    expect(parseTracingConfig(doc(), "t").config).toEqual({ endpoint: "localhost:4317", samplingRatePerMillion: 0 });
    expect(parseTracingConfig(doc({ endpoint: "http://[::1]:14317", samplingRatePerMillion: 1_000_000 }), "t").config).toEqual({ endpoint: "http://[::1]:14317", samplingRatePerMillion: 1_000_000 });
  });

  it("accepts the three versions of the kind under the configured suffix, and no other", () => {
    expect(tracingApiVersions("k8s.io")).toEqual(["apiserver.config.k8s.io/v1", "apiserver.k8s.io/v1beta1", "apiserver.k8s.io/v1alpha1"]);
    for (const apiVersion of tracingApiVersions("k8s.io")) expect(parseTracingConfig(doc({ apiVersion }), "t", { groupSuffix: "k8s.io" }).config.samplingRatePerMillion).toBe(0);
    expect(problems(doc({ apiVersion: "apiserver.config.k8s.io/v1" }))).toEqual([
      'expected `apiVersion` one of "apiserver.config.platform.io/v1", "apiserver.platform.io/v1beta1", "apiserver.platform.io/v1alpha1", got "apiserver.config.k8s.io/v1"',
    ]);
    expect(problems(doc({ kind: "EgressSelectorConfiguration" }))).toEqual(['expected `kind` "TracingConfiguration", got "EgressSelectorConfiguration"']);
  });

  it("refuses unknown fields and invalid values, naming the field", () => {
    expect(problems(doc({ samplingRate: 5 }))).toEqual(["unknown field `samplingRate`; known fields: apiVersion, kind, endpoint, samplingRatePerMillion"]);
    expect(problems(doc({ samplingRatePerMillion: 1_000_001 }))).toEqual(["expected `samplingRatePerMillion` a whole number from 0 to 1000000, got 1000001"]);
    expect(problems(doc({ samplingRatePerMillion: -1 }))).toEqual(["expected `samplingRatePerMillion` a whole number from 0 to 1000000, got -1"]);
    expect(problems(doc({ endpoint: "collector" }))).toEqual(['expected `endpoint` a collector address `host:port` (or http://host:port, https://host:port), got "collector"']);
    expect(problems(doc({ endpoint: "grpc://c:4317" }))[0]).toContain("`endpoint`");
    expect(problems(doc({ endpoint: "c:70000" }))[0]).toContain("`endpoint`");
  });

  it("loads a file and names an unreadable one", async () => {
    const path = tempFile("tracing.yaml", doc({ samplingRatePerMillion: 10 }));
    expect((await loadTracingConfig(path)).config.samplingRatePerMillion).toBe(10);
    await expect(loadTracingConfig(join(tempDir(), "missing.yaml"))).rejects.toThrow(/cannot read tracing configuration .*missing\.yaml: ENOENT/);
  });
});

describe("docs/configuration.md", () => {
  it("shows a TracingConfiguration that loads, and the message of a bad one", () => {
    const text = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8");
    const example = /```yaml\n(apiVersion: apiserver\.config\.platform\.io\/v1\nkind: TracingConfiguration[\s\S]*?)```/.exec(text)![1]!;
    expect(parseTracingConfig(example, "docs").config).toEqual({ endpoint: "127.0.0.1:4317", samplingRatePerMillion: 10_000 });
    const shown = /``error: (invalid tracing configuration tracing\.yaml:\s+expected `samplingRatePerMillion`[^`]*?)``/.exec(text)![1]!.replace(/\s+/g, " ");
    expect(() => parseTracingConfig(doc({ samplingRatePerMillion: 2_000_000 }), "tracing.yaml")).toThrow(shown);
  });
});
