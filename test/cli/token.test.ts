// platform-ca token's pieces: kubeadm's token format from the CSPRNG, the Secret it writes, the list's rows and
// kubeadm's TTL rounding, and the one-line refusals of bad flags (exit 2) before any request is made.
import { describe, expect, it } from "vitest";
import { groupNames } from "../../src/api/group.js";
import { BOOTSTRAP_TOKEN } from "../../src/apiserver/auth/authn-bootstrap-token.js";
import { shortHumanDuration } from "../../src/apiserver/registry/resources/printing.js";
import { bootstrapTokenSecret, newBootstrapToken, tokenRows } from "../../src/cli/commands/token.js";
import { runCli } from "./fixtures.js";

const decoded = (data: Record<string, string> | undefined) => Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString()]));

describe("platform-ca token", () => {
  it("draws tokens of kubeadm's format, all different", () => {
    const tokens = Array.from({ length: 2000 }, newBootstrapToken);
    expect(tokens.every((t) => BOOTSTRAP_TOKEN.test(t))).toBe(true);
    expect(new Set(tokens).size).toBe(2000);
    // Every character of the alphabet turns up: no bias that leaves some out.
    expect(new Set(tokens.join("").replace(/\./g, "")).size).toBe(36);
  });

  it("writes the Secret the authenticator reads, under each profile's names", () => {
    const now = Date.parse("2026-11-28T10:00:00Z");
    const s = bootstrapTokenSecret(groupNames("k8s.io"), "abcdef.0123456789abcdef", { ttlMs: 3600_000, usages: ["authentication"], groups: ["system:bootstrappers:workers"], description: "rack 4", now });
    expect(s).toMatchObject({ type: "bootstrap.kubernetes.io/token", metadata: { name: "bootstrap-token-abcdef", namespace: "kube-system" } });
    expect(decoded(s.data)).toEqual({
      "token-id": "abcdef",
      "token-secret": "0123456789abcdef",
      expiration: "2026-11-28T11:00:00Z",
      "usage-bootstrap-authentication": "true",
      "auth-extra-groups": "system:bootstrappers:workers",
      description: "rack 4",
    });
    const forever = bootstrapTokenSecret(groupNames("platform.io"), "abcdef.0123456789abcdef", { ttlMs: 0, usages: ["signing", "authentication"], groups: [], now });
    expect(forever).toMatchObject({ type: "bootstrap.platform.io/token", metadata: { namespace: "platform-system" } });
    expect(Object.keys(decoded(forever.data)).sort()).toEqual(["token-id", "token-secret", "usage-bootstrap-authentication", "usage-bootstrap-signing"]);
  });

  it("lists kubeadm's columns: a TTL rounded down, <forever>, <invalid> once expired; Secrets that hold no token are left out", () => {
    const now = Date.parse("2026-11-28T10:00:00Z");
    const names = groupNames("k8s.io");
    const secret = (token: string, ttlMs: number) => bootstrapTokenSecret(names, token, { ttlMs, usages: ["signing"], groups: [], now });
    const expired = bootstrapTokenSecret(names, "cccccc.0123456789abcdef", { ttlMs: 1000, usages: ["authentication"], groups: [], now: now - 60_000 });
    const broken = { ...secret("dddddd.0123456789abcdef", 0), data: { "token-id": Buffer.from("DDD").toString("base64") } };
    expect(tokenRows([secret("aaaaaa.0123456789abcdef", 86_399_000), secret("bbbbbb.0123456789abcdef", 0), expired, broken], now)).toEqual([
      ["aaaaaa.0123456789abcdef", "23h", "2026-11-29T09:59:59Z", "signing", "<none>", "<none>"],
      ["bbbbbb.0123456789abcdef", "<forever>", "<never>", "signing", "<none>", "<none>"],
      ["cccccc.0123456789abcdef", "<invalid>", "2026-11-28T09:59:01Z", "authentication", "<none>", "<none>"],
    ]);
  });

  it("rounds as upstream's ShortHumanDuration", () => {
    const cases: [number, string][] = [[-2, "<invalid>"], [-1, "0s"], [0, "0s"], [59, "59s"], [60, "1m"], [3599, "59m"], [3600, "1h"], [7140, "1h"], [86_399, "23h"], [86_400, "1d"], [364 * 86_400, "364d"], [365 * 86_400, "1y"]];
    expect(cases.map(([s]) => shortHumanDuration(s))).toEqual(cases.map(([, want]) => want));
  });

  it.each([
    [["create", "--ttl", "soon"], /^error: --ttl "soon": expected a duration such as 24h, 30m or 0 \(never expires\)\n$/],
    [["create", "--usages", "signing,joining"], /^error: --usages "signing,joining": expected a comma-separated list of signing, authentication\n$/],
    [["create", "--groups", "admins"], /^error: --groups: "admins" is not a group below system:bootstrappers: \(e\.g\. system:bootstrappers:workers\)\n$/],
    [["create", "ABCDEF.0123456789abcdef"], /^error: token "ABCDEF.0123456789abcdef": expected 6 and 16 characters of \[a-z0-9\] joined by a dot/],
    [["delete", "abc"], /^error: "abc": expected a token id \(6 of \[a-z0-9\]\) or a whole token\n$/],
  ])("refuses %j with one line and exit 2", async (args, message) => {
    const r = await runCli(["token", ...args, "--server", "https://127.0.0.1:1"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
