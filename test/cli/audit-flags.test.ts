// The audit flags as `apiserver` and `up` parse them: upstream's webhook defaults, explicit values, Go-style booleans.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { addAuditOptions, readAuditSetup, type AuditFlags } from "../../src/cli/audit-flags.js";
import { silentLogger } from "../../src/logger.js";
import { tempDir } from "../fixtures/temp-dir.js";

const dir = tempDir();
writeFileSync(join(dir, "policy.yaml"), "apiVersion: audit.platform.io/v1\nkind: Policy\nrules: [{ level: Metadata }]\n");
writeFileSync(join(dir, "hook.conf"), "apiVersion: v1\nkind: Config\nclusters: [{name: r, cluster: {server: 'https://127.0.0.1:9443/events', insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t0ken}}]\ncontexts: [{name: c, context: {cluster: r, user: u}}]\ncurrent-context: c\n");

/** The flags as commander hands them to the action. */
function parse(args: string[]): AuditFlags {
  const command = addAuditOptions(new Command().exitOverride());
  command.parse(["--audit-policy-file", join(dir, "policy.yaml"), "--audit-webhook-config-file", join(dir, "hook.conf"), ...args], { from: "user" });
  return command.opts<AuditFlags>();
}

describe("audit webhook flags", () => {
  it("default to upstream's values", async () => {
    const setup = await readAuditSetup(parse([]), "platform.io", silentLogger());
    expect(setup?.webhook).toMatchObject({
      mode: "batch",
      batch: { bufferSize: 10_000, maxBatchSize: 400, maxBatchWaitMs: 30_000, throttle: { qps: 10, burst: 15 } },
      initialBackoffMs: 10_000,
      apiVersion: "audit.platform.io/v1",
      config: { server: "https://127.0.0.1:9443/events", credentials: { type: "token", token: "t0ken" } },
    });
    expect(setup?.logPath).toBeUndefined();
  });

  it("take explicit values, durations in Go's syntax, and --flag=false", async () => {
    const flags = parse([
      "--audit-webhook-mode", "blocking-strict", "--audit-webhook-batch-buffer-size", "50", "--audit-webhook-batch-max-size", "7",
      "--audit-webhook-batch-max-wait", "1m30s", "--audit-webhook-batch-throttle-enable=false", "--audit-webhook-initial-backoff", "250ms",
    ]);
    const setup = await readAuditSetup(flags, "platform.io", silentLogger());
    expect(setup?.webhook).toMatchObject({ mode: "blocking-strict", batch: { bufferSize: 50, maxBatchSize: 7, maxBatchWaitMs: 90_000 }, initialBackoffMs: 250 });
    expect(setup?.webhook?.batch.throttle).toBeUndefined();
    const throttled = await readAuditSetup(parse(["--audit-webhook-batch-throttle-qps", "2.5", "--audit-webhook-batch-throttle-burst", "3"]), "platform.io", silentLogger());
    expect(throttled?.webhook?.batch.throttle).toEqual({ qps: 2.5, burst: 3 });
  });

  it("names the group suffix's audit version, and refuses another", async () => {
    const setup = await readAuditSetup(parse([]), "example.com", silentLogger()).catch((e: Error) => e);
    // The policy file says audit.platform.io/v1: under another suffix it is refused first.
    expect(String(setup)).toMatch(/expected `apiVersion` "audit\.example\.com\/v1"/);
    await expect(readAuditSetup(parse(["--audit-webhook-version", "audit.k8s.io/v1"]), "platform.io", silentLogger())).rejects.toThrow(/expected `--audit-webhook-version` to be audit\.platform\.io\/v1, got "audit\.k8s\.io\/v1"/);
  });
});
