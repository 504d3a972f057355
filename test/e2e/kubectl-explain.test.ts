// kubectl explain and kubectl's field validation against the published schemas, under both group suffixes.
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { groupNames } from "../../src/api/group.js";
import { ENVELOPE_FIELDS, resolveGroupRole } from "../../src/api/schema.js";
import { KIND_SCHEMAS } from "../../src/api/schema/kinds.js";
import { allResources } from "../../src/apiserver/registry/resources/index.js";
import { csr, csrObject } from "../fixtures/csr.js";
import { ensureBuilt, kubectlFails, kubectlFor, startApiserver, type ApiserverProcess, type Kubectl } from "./apiserver-process.js";

describe.each(["platform.io", "k8s.io"])("kubectl explain and field validation under %s", (suffix) => {
  const names = groupNames(suffix);
  const resources = allResources(names);
  /** Every kind of the field schema that a resource serves (Status, DeleteOptions and TokenRequest have none). */
  const explained = KIND_SCHEMAS.flatMap((def) => {
    const group = resolveGroupRole(def.role, names);
    return resources.filter((r) => r.group === group && r.kind === def.kind).map((r) => ({ def, resource: r }));
  });
  let server: ApiserverProcess;
  let kubectl: Kubectl;

  beforeAll(async () => {
    ensureBuilt();
    server = await startApiserver(suffix === "k8s.io" ? { groupSuffix: suffix } : {});
    kubectl = kubectlFor(server.address);
  }, 240_000);
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
  });

  it("explains csr, csr.spec.usages and clustertrustbundle.spec with the schema's descriptions", () => {
    const top = kubectl(["explain", "csr"]);
    expect(top).toMatch(new RegExp(`^GROUP:\\s+${names.certificates.replaceAll(".", "\\.")}\\nKIND:\\s+CertificateSigningRequest\\nVERSION:\\s+v1\\n`));
    expect(top).toMatch(/^ {2}spec\t<CertificateSigningRequestSpec> -required-$/m);
    expect(top).toMatch(/^ {2}metadata\t<ObjectMeta>$/m);
    const usages = kubectl(["explain", "csr.spec.usages"]);
    expect(usages).toMatch(/^FIELD: usages <\[\]string>$/m);
    expect(usages).toContain("Requested key usages, e.g. digital signature, key encipherment, client auth.");
    const ctb = kubectl(["explain", "clustertrustbundle.spec"]);
    expect(ctb).toMatch(/^VERSION:\s+v1beta1$/m);
    expect(ctb).toMatch(/^ {2}trustBundle\t<string> -required-$/m);
    expect(kubectl(["explain", "csr.status.conditions"])).toMatch(/^ {2}type\t<string> -required-$/m);
    const v2 = kubectl(["explain", "csr.spec.usages", "--output", "plaintext-openapiv2"]);
    expect(v2).toMatch(/^FIELD: {4}usages <\[\]string>$/m);
    expect(v2.replace(/\s+/g, " ")).toContain("Requested key usages, e.g. digital signature, key encipherment, client auth.");
  });

  it("explains every served kind and one nested field of each", () => {
    expect(explained.length).toBeGreaterThanOrEqual(15);
    for (const { def, resource } of explained) {
      const apiVersion = resource.group ? `${resource.group}/${resource.version}` : resource.version;
      const out = kubectl(["explain", resource.plural, "--api-version", apiVersion]);
      expect(out, def.kind).toMatch(new RegExp(`^KIND:\\s+${def.kind}$`, "m"));
      expect(out.replace(/\s+/g, " "), def.kind).toContain(`DESCRIPTION: ${def.root.description}`);
      for (const field of Object.keys(def.root.fields)) expect(out, `${def.kind}.${field}`).toMatch(new RegExp(`^ {2}${field}\\t<`, "m"));
      // The same from the protobuf v2 document, kubectl's other explain source.
      const v2 = kubectl(["explain", resource.plural, "--api-version", apiVersion, "--output", "plaintext-openapiv2"]);
      expect(v2, `${def.kind} (v2)`).toMatch(new RegExp(`^KIND:\\s+${def.kind}$`, "m"));
      for (const field of Object.keys(def.root.fields)) expect(v2, `${def.kind}.${field} (v2)`).toMatch(new RegExp(`^ {3}${field}\\t<`, "m"));
      // The kind's own first object or list (spec, rules, subjects, …), else its metadata.
      const [name, node] = Object.entries(def.root.fields).find(([f, n]) => !ENVELOPE_FIELDS.includes(f) && (n.type === "object" || n.type === "list")) ?? ["metadata", def.root.fields.metadata!];
      const field = kubectl(["explain", `${resource.plural}.${name}`, "--api-version", apiVersion]);
      expect(field, `${def.kind}.${name}`).toMatch(new RegExp(`^FIELD: ${name} <`, "m"));
      if (node.description) expect(field.replace(/\s+/g, " "), `${def.kind}.${name}`).toContain(node.description);
      if (node.type === "object") for (const f of Object.keys(node.fields)) expect(field, `${def.kind}.${name}.${f}`).toMatch(new RegExp(`^ {2}${f}\\t<`, "m"));
    }
  });

  it("warns about an unknown field with --validate=warn and refuses it with --validate=strict", async () => {
    const manifest = (name: string, pem: string) => {
      const obj = csrObject({ names, name, request: pem, signerName: `${suffix}/apiserver-client` }) as unknown as Record<string, any>;
      return toYaml({ ...obj, spec: { ...obj.spec, bogus: "x" } });
    };
    const warned = spawnSync("kubectl", [...kubectl.baseArgs, "create", "--validate=warn", "-f", "-"], { input: manifest("warned", (await csr({ cn: "warned" })).pem), encoding: "utf8" });
    expect(warned.status).toBe(0);
    expect(warned.stderr).toContain('Warning: unknown field "spec.bogus"');
    expect(warned.stdout).toContain(`certificatesigningrequest.${names.certificates}/warned created`);
    const err = kubectlFails(kubectl, ["create", "--validate=strict", "-f", "-"], manifest("refused", (await csr({ cn: "refused" })).pem));
    expect(err).toContain('strict decoding error: unknown field "spec.bogus"');
    expect(kubectlFails(kubectl, ["get", "csr", "refused"])).toContain("not found");
  });

  it("builds client-side apply's strategic merge patch from the published schema", async () => {
    const obj = csrObject({ names, name: "applied", request: (await csr({ cn: "applied" })).pem, signerName: `${suffix}/apiserver-client` }) as unknown as Record<string, any>;
    kubectl(["apply", "-f", "-"], toYaml(obj));
    const second = toYaml({ ...obj, metadata: { ...obj.metadata, labels: { team: "b" } } });
    const run = spawnSync("kubectl", [...kubectl.baseArgs, "apply", "-v=8", "-f", "-"], { input: second, encoding: "utf8" });
    expect(run.stdout).toContain("configured");
    expect(run.stderr).toContain("Content-Type: application/strategic-merge-patch+json");
    expect(run.stderr).not.toContain("/openapi/v2");
    expect(kubectl(["get", "csr", "applied", "-o", "jsonpath={.metadata.labels.team}"])).toBe("b");
  });
});
