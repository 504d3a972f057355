import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { parsePkiManifest, type PkiManifest } from "../../src/config/pki-manifest.js";
import { certificateFingerprint, planDevPki, type Observation, type PlanInput } from "../../src/devpki/plan.js";
import { emptyState, fingerprint, type DevPkiState } from "../../src/devpki/state.js";

const DAY = 86_400_000;
const NOW = new Date("2030-01-01T00:00:00Z");

function devManifest(edit: (certs: Record<string, unknown>[]) => void = () => {}): PkiManifest {
  const certificates: Record<string, unknown>[] = [
    { name: "web", kind: "server", dns: ["localhost"], lifetime: "720h" },
    { name: "admin", kind: "client", organizations: ["system:masters"] },
  ];
  edit(certificates);
  return parsePkiManifest(stringify({ version: 1, cas: [{ name: "ca" }], certificates }), "pki.yaml");
}

function seen(sha256: string, daysLeft: number, startedDaysAgo = 1): Observation {
  return { sha256, notBefore: new Date(NOW.getTime() - startedDaysAgo * DAY), notAfter: new Date(NOW.getTime() + daysLeft * DAY) };
}

/** A state and observations as a previous run would have left them for `m`: everything issued, valid for a year. */
function settled(m: PkiManifest): Pick<PlanInput, "state" | "cas" | "certificates"> {
  const state: DevPkiState = {
    version: 1,
    cas: { ca: { entry: fingerprint(m.cas[0]), cert: "ca-sha" } },
    certificates: Object.fromEntries(m.certificates.map((c) => [c.name, { entry: certificateFingerprint(m, c), cert: `${c.name}-sha`, ca: "ca-sha" }])),
  };
  return {
    state,
    cas: new Map([["ca", seen("ca-sha", 3650)]]),
    certificates: new Map(m.certificates.map((c) => [c.name, seen(`${c.name}-sha`, 365)])),
  };
}

function plan(m: PkiManifest, over: Partial<PlanInput> = {}) {
  const p = planDevPki({ manifest: m, ...settled(m), now: NOW, renewWithinSeconds: 30 * 86_400, force: false, ...over });
  return {
    cas: p.cas.map((d) => [d.entry.name, d.action, d.reason]),
    certs: Object.fromEntries(p.certificates.map((d) => [d.entry.name, [d.action, d.reason]])),
  };
}

describe("planDevPki", () => {
  it("issues everything on a first run", () => {
    const m = devManifest();
    expect(plan(m, { state: emptyState(), cas: new Map(), certificates: new Map() })).toEqual({
      cas: [["ca", "issued", "new"]],
      certs: { web: ["issued", "new"], admin: ["issued", "new"] },
    });
  });

  it("keeps everything on a second run", () => {
    expect(plan(devManifest())).toEqual({ cas: [["ca", "kept", "up to date"]], certs: { web: ["kept", "up to date"], admin: ["kept", "up to date"] } });
  });

  it("re-issues only the certificate whose manifest entry changed", () => {
    const before = devManifest();
    const after = devManifest((c) => (c[0]!.dns = ["localhost", "web.test"]));
    expect(plan(after, settled(before)).certs).toEqual({ web: ["renewed", "manifest changed"], admin: ["kept", "up to date"] });
  });

  it("ignores the order of fields in an entry", () => {
    const before = devManifest();
    const after = devManifest((c) => (c[1] = { organizations: ["system:masters"], kind: "client", name: "admin" }));
    expect(plan(after, settled(before)).certs.admin).toEqual(["kept", "up to date"]);
  });

  it.each<[string, number, string]>([
    ["expires within the margin", 10, "renewed"],
    ["expires just after the margin", 31, "kept"],
  ])("renews a certificate that %s", (_, daysLeft, action) => {
    const m = devManifest();
    const s = settled(m);
    const certificates = new Map(s.certificates);
    certificates.set("web", seen("web-sha", daysLeft));
    expect(plan(m, { ...s, certificates }).certs.web![0]).toBe(action);
  });

  it("renews every certificate when the margin is longer than their lifetime", () => {
    expect(Object.values(plan(devManifest(), { renewWithinSeconds: 400 * 86_400 }).certs).map((d) => d[0])).toEqual(["renewed", "renewed"]);
  });

  it.each<[string, Observation, string]>([
    ["an expired certificate", seen("web-sha", -1, 30), "expired"],
    ["a certificate that is not yet valid", seen("web-sha", 300, -2), "not yet valid"],
    ["a certificate replaced on disk", seen("other-sha", 365), "changed on disk"],
  ])("renews %s", (_, observation, reason) => {
    const m = devManifest();
    const s = settled(m);
    const certificates = new Map(s.certificates).set("web", observation);
    expect(plan(m, { ...s, certificates }).certs.web).toEqual(["renewed", reason]);
  });

  it("issues a certificate whose files were removed", () => {
    const m = devManifest();
    const s = settled(m);
    const certificates = new Map(s.certificates);
    certificates.delete("admin");
    expect(plan(m, { ...s, certificates }).certs.admin).toEqual(["issued", "missing files"]);
  });

  it("renews every leaf of a CA that is re-created, and keeps the CA's leaves when another CA is replaced", () => {
    const m = devManifest();
    const s = settled(m);
    expect(plan(m, { ...s, cas: new Map() })).toEqual({
      cas: [["ca", "issued", "missing files"]],
      certs: { web: ["renewed", "CA changed"], admin: ["renewed", "CA changed"] },
    });
  });

  it("adopts CA files found without a record and re-issues leaves that another CA signed", () => {
    const m = devManifest();
    const s = settled(m);
    const plan2 = plan(m, { ...s, state: { ...s.state, cas: {} }, cas: new Map([["ca", seen("made-by-issue", 3650)]]) });
    expect(plan2.cas).toEqual([["ca", "kept", "up to date"]]);
    expect(plan2.certs.web).toEqual(["renewed", "CA changed"]);
  });

  it("renews a CA that expires within the margin, and with it its leaves", () => {
    const m = devManifest();
    const s = settled(m);
    const p = plan(m, { ...s, cas: new Map([["ca", seen("ca-sha", 5)]]) });
    expect(p.cas[0]!.slice(1)).toEqual(["renewed", `expires ${new Date(NOW.getTime() + 5 * DAY).toISOString().slice(0, 10)}`]);
    expect(p.certs.admin).toEqual(["renewed", "CA changed"]);
  });

  it("re-issues every leaf but keeps the CA when forced", () => {
    expect(plan(devManifest(), { force: true })).toEqual({ cas: [["ca", "kept", "up to date"]], certs: { web: ["renewed", "forced"], admin: ["renewed", "forced"] } });
  });

  it("re-issues a leaf that has files but no record", () => {
    const m = devManifest();
    const s = settled(m);
    expect(plan(m, { ...s, state: { ...s.state, certificates: {} } }).certs.web).toEqual(["renewed", "no record"]);
  });
});
