import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { DEFAULT_USAGES, parsePkiManifest } from "../../src/config/pki-manifest.js";
import { groupNames } from "../../src/api/group.js";
import { isPlatformError, type PlatformError } from "../../src/errors.js";

type Raw = Record<string, unknown>;

/** A valid manifest with one CA and one server certificate; `edit` changes the raw document before it is parsed. */
function manifest(edit: (m: Raw & { cas: Raw[]; certificates: Raw[]; signers: Raw[] }) => void = () => {}): string {
  const m = {
    version: 1,
    cas: [{ name: "ca", commonName: "dev CA" }],
    signers: [] as Raw[],
    certificates: [{ name: "web", kind: "server", dns: ["localhost"] }] as Raw[],
  };
  edit(m);
  return stringify(m);
}

function problems(text: string): PlatformError {
  try {
    parsePkiManifest(text, "/tmp/pki.yaml");
  } catch (err) {
    if (isPlatformError(err, "MANIFEST_INVALID")) return err;
    throw err;
  }
  throw new Error("manifest was accepted");
}

const names = groupNames();

describe("parsePkiManifest", () => {
  it("accepts the committed certs-dev/pki.yaml with the product's dev PKI", () => {
    const m = parsePkiManifest(readFileSync(new URL("../../certs-dev/pki.yaml", import.meta.url), "utf8"), "certs-dev/pki.yaml");
    expect(m.cas.map((c) => c.name)).toEqual(["ca"]);
    const byName = new Map(m.certificates.map((c) => [c.name, c]));
    expect(byName.get("apiserver")).toMatchObject({ kind: "server", dns: ["localhost"], ip: ["127.0.0.1", "::1"] });
    expect(byName.get("admin")).toMatchObject({ kind: "client", organizations: ["system:masters"] });
    expect(byName.get("admin")!.signer).toBeUndefined();
    expect(byName.get("node-1-client")!.signer).toBe(names.signers.nodeagentClient);
    expect(byName.get("node-1-serving")!.signer).toBe(names.signers.nodeagentServing);
  });

  it("fills defaults: usages by kind, CN from the name, the first CA, the default key type and lifetime", () => {
    const m = parsePkiManifest(manifest((r) => r.certificates.push({ name: "cli", kind: "client" })), "x.yaml");
    expect(m.certificates[0]).toMatchObject({ commonName: "web", usages: DEFAULT_USAGES.server, ca: "ca", keyType: "p256", lifetimeSeconds: 365 * 86400 });
    expect(m.certificates[1]).toMatchObject({ usages: DEFAULT_USAGES.client });
    expect(m.cas[0]).toMatchObject({ keyType: "p256", lifetimeSeconds: 10 * 365 * 86400 });
  });

  it("expands well-known signer short names with the group suffix and maps each signer to its CA", () => {
    const m = parsePkiManifest(
      manifest((r) => {
        r.groupSuffix = "k8s.io";
        r.cas.push({ name: "nodes-ca" });
        r.signers.push({ name: "kubelet-serving", ca: "nodes-ca" });
        r.certificates.push({ name: "n1", kind: "server", ip: ["10.0.0.1"], signer: "kubelet-serving" });
      }),
      "x.yaml",
    );
    expect(m.signers[0]).toEqual({ name: "kubernetes.io/kubelet-serving", ca: "nodes-ca" });
    expect(m.certificates[1]).toMatchObject({ signer: "kubernetes.io/kubelet-serving", ca: "nodes-ca" });
  });

  it("resolves a custom signer's policy path against the manifest's directory", () => {
    const m = parsePkiManifest(
      manifest((r) => r.signers.push({ name: "example.com/mtls", ca: "ca", policy: "policies/mtls.yaml" })),
      "/srv/pki/pki.yaml",
    );
    expect(m.signers[0]!.policy).toBe("/srv/pki/policies/mtls.yaml");
  });

  it.each<[string, (r: Raw & { cas: Raw[]; certificates: Raw[]; signers: Raw[] }) => void, string]>([
    ["a wrong version", (r) => (r.version = 2), "version"],
    ["an unknown top-level field", (r) => (r.certs = []), "certs"],
    ["no CA at all", (r) => (r.cas = []), "cas"],
    ["a misspelt certificate field", (r) => (r.certificates[0]!.dsn = ["x"]), "certificates[0].dsn"],
    ["a name that is not a file name", (r) => (r.certificates[0]!.name = "../etc"), "certificates[0].name"],
    ["a certificate named like a CA", (r) => (r.certificates[0]!.name = "ca"), "certificates[0].name"],
    ["an unknown kind", (r) => (r.certificates[0]!.kind = "peer"), "certificates[0].kind"],
    ["a server certificate without DNS or IP names", (r) => (r.certificates[0]!.dns = []), "certificates[0].dns"],
    ["an address that is not an IP", (r) => (r.certificates[0]!.ip = ["300.1.1.1"]), "certificates[0].ip[0]"],
    ["an email without @", (r) => (r.certificates[0]!.email = ["nobody"]), "certificates[0].email[0]"],
    ["a relative URI", (r) => (r.certificates[0]!.uri = ["/path"]), "certificates[0].uri[0]"],
    ["a DNS name with a space", (r) => (r.certificates[0]!.dns = ["a b"]), "certificates[0].dns[0]"],
    ["an unknown key type", (r) => (r.certificates[0]!.keyType = "rsa1024"), "certificates[0].keyType"],
    ["a lifetime that is not a duration", (r) => (r.certificates[0]!.lifetime = "a year"), "certificates[0].lifetime"],
    ["a lifetime under ten minutes", (r) => (r.certificates[0]!.lifetime = "5m"), "certificates[0].lifetime"],
    ["a lifetime key without a value", (r) => (r.certificates[0]!.lifetime = null), "certificates[0].lifetime"],
    ["a lifetime that is not whole seconds", (r) => (r.certificates[0]!.lifetime = "600.5s"), "certificates[0].lifetime"],
    ["a CA that does not exist", (r) => (r.certificates[0]!.ca = "other"), "certificates[0].ca"],
    ["both a signer and a CA", (r) => Object.assign(r.certificates[0]!, { signer: "nodeagent-serving", ca: "ca" }), "certificates[0].ca"],
    ["an unlisted custom signer", (r) => (r.certificates[0]!.signer = "example.com/x"), "certificates[0].signer"],
    ["a custom signer without a policy", (r) => r.signers.push({ name: "example.com/x", ca: "ca" }), "signers[0].policy"],
    ["a signer name that is not qualified", (r) => r.signers.push({ name: "apiserver-clent", ca: "ca" }), "signers[0].name"],
    ["an unknown usage", (r) => (r.certificates[0]!.usages = ["server auth", "server-auth"]), "certificates[0].usages[1]"],
    ["a CA without a name", (r) => delete r.cas[0]!.name, "cas[0].name"],
    ["a bad group suffix", (r) => (r.groupSuffix = "local"), "groupSuffix"],
    ["a non-list SAN field", (r) => (r.certificates[0]!.dns = "localhost"), "certificates[0].dns"],
  ])("refuses %s and names the field", (_, edit, field) => {
    const err = problems(manifest(edit));
    const fields = err.causes.length > 0 ? err.causes.map((c) => c.field) : [/: ([^:]+): /.exec(err.message)?.[1]];
    expect(fields).toContain(field);
  });

  it("reports every problem at once, each with its field", () => {
    const err = problems(manifest((r) => {
      r.certificates[0]!.ip = ["nope"];
      r.certificates[0]!.keyType = "dsa";
    }));
    expect(err.message).toMatch(/2 problems/);
    expect(err.causes.map((c) => c.field)).toEqual(["certificates[0].ip[0]", "certificates[0].keyType"]);
  });

  it("refuses YAML that does not parse", () => {
    expect(problems("cas: [\n").message).toMatch(/^invalid dev PKI manifest \/tmp\/pki.yaml: /);
  });
});
