// The admission flags read together: plugins and configurations handed to the server, and the warnings at start for a
// disabled check or a configuration nothing uses.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { readAdmissionSettings } from "../../src/cli/admission-flags.js";
import { createLogger } from "../../src/logger.js";
import { tempDir } from "../fixtures/temp-dir.js";

/** A logger whose JSON lines are kept, and those lines parsed. */
function capture() {
  let output = "";
  const destination = new Writable({ write(chunk, _encoding, done) { output += String(chunk); done(); } });
  return { logger: createLogger({ level: "info", destination }), lines: () => output.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>) };
}

function admissionFile(): string {
  const path = join(tempDir(), "admission.yaml");
  const erl = { apiVersion: "eventratelimit.admission.platform.io/v1alpha1", kind: "Configuration", limits: [{ type: "User", qps: 2, burst: 4 }] };
  writeFileSync(path, stringify({ apiVersion: "apiserver.config.platform.io/v1", kind: "AdmissionConfiguration", plugins: [{ name: "EventRateLimit", configuration: erl }] }));
  return path;
}

describe("readAdmissionSettings", () => {
  it("runs the plugins on by default without flags, and says nothing", async () => {
    const { logger, lines } = capture();
    const s = await readAdmissionSettings({}, "platform.io", logger);
    expect(s.plugins).toContain("CertificateApproval");
    expect(s.plugins).not.toContain("EventRateLimit");
    expect(s.configs).toBeUndefined();
    expect(lines()).toEqual([]);
  });

  it("adds EventRateLimit with its configuration from the file", async () => {
    const { logger, lines } = capture();
    const s = await readAdmissionSettings({ admissionControlConfigFile: admissionFile() }, "platform.io", logger);
    expect(s.plugins).toContain("EventRateLimit");
    expect(s.configs?.EventRateLimit?.limits).toEqual([{ type: "User", qps: 2, burst: 4, cacheSize: 4096 }]);
    expect(lines()).toEqual([]);
  });

  it("warns about a disabled check and about a configuration for a plugin that a flag disables", async () => {
    const { logger, lines } = capture();
    const s = await readAdmissionSettings({ admissionControlConfigFile: admissionFile(), disableAdmissionPlugins: ["EventRateLimit", "CertificateApproval"] }, "platform.io", logger);
    expect(s.plugins).not.toContain("EventRateLimit");
    expect(s.plugins).not.toContain("CertificateApproval");
    expect(lines().map((l) => [l.level, l.plugin, l.msg])).toEqual([
      [40, "CertificateApproval", "admission plugin disabled: the writes it checks are no longer refused"],
      [40, "EventRateLimit", "admission plugin configured but disabled: its configuration is not used"],
    ]);
  });
});
