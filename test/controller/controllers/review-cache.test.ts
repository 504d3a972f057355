// AllowedReviewCache: which questions share an answer, and for how long.
import { describe, expect, it } from "vitest";
import type { SubjectAccessReviewSpec } from "../../../src/api/types/authorization.js";
import { AllowedReviewCache } from "../../../src/controller/controllers/review-cache.js";

const spec = (o: Partial<SubjectAccessReviewSpec> = {}): SubjectAccessReviewSpec => ({
  user: "system:bootstrap:abcdef",
  groups: ["system:bootstrappers", "system:authenticated"],
  resourceAttributes: { group: "certificates.platform.io", resource: "certificatesigningrequests", subresource: "nodeclient", verb: "create", version: "*" },
  ...o,
});

function cache(ttlMs = 10_000) {
  let now = 1_000_000;
  return { c: new AllowedReviewCache(ttlMs, () => now), advance: (ms: number) => void (now += ms) };
}

describe("AllowedReviewCache", () => {
  it("answers the same question until the TTL has passed", () => {
    const { c, advance } = cache();
    expect(c.allowed(spec())).toBe(false);
    c.remember(spec());
    expect(c.allowed(spec())).toBe(true);
    advance(9_999);
    expect(c.allowed(spec())).toBe(true);
    advance(1);
    expect(c.allowed(spec())).toBe(false);
    expect(c.size).toBe(0);
  });

  it("forgets an answer when the clock is set back, so a jump cannot stretch the TTL", () => {
    const { c, advance } = cache();
    c.remember(spec());
    advance(-1);
    expect(c.allowed(spec())).toBe(false);
  });

  it("treats groups as a set and extra values without regard to order", () => {
    const { c } = cache();
    c.remember(spec({ extra: { b: ["2", "1"], a: ["x"] } }));
    expect(c.allowed(spec({ groups: ["system:authenticated", "system:bootstrappers"], extra: { a: ["x"], b: ["1", "2"] } }))).toBe(true);
  });

  it.each<[string, Partial<SubjectAccessReviewSpec>]>([
    ["another user", { user: "mallory" }],
    ["another uid", { uid: "other" }],
    ["one more group", { groups: ["system:bootstrappers", "system:authenticated", "system:masters"] }],
    ["extra values", { extra: { scope: ["x"] } }],
    ["another subresource", { resourceAttributes: { group: "certificates.platform.io", resource: "certificatesigningrequests", subresource: "selfnodeclient", verb: "create", version: "*" } }],
  ])("does not answer for %s", (_name, change) => {
    const { c } = cache();
    c.remember(spec());
    expect(c.allowed(spec(change))).toBe(false);
  });

  it("keeps nothing with a TTL of 0, and refuses a negative TTL", () => {
    const { c } = cache(0);
    c.remember(spec());
    expect(c.allowed(spec())).toBe(false);
    expect(c.size).toBe(0);
    expect(() => new AllowedReviewCache(-1, () => 0)).toThrow(/TTL/);
  });

  it("holds at most 4096 questions, forgetting the oldest", () => {
    const { c } = cache();
    for (let i = 0; i < 4097; i++) c.remember(spec({ user: `user-${i}` }));
    expect(c.size).toBe(4096);
    expect(c.allowed(spec({ user: "user-0" }))).toBe(false);
    expect(c.allowed(spec({ user: "user-4096" }))).toBe(true);
  });
});
