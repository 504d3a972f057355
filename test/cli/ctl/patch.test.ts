// `platformctl patch` as a real process against `platform-ca up`: every patch type on every seed kind, --local, dry runs,
// subresources, golden outputs for every -o format, kubectl parity, warnings, and bad input.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { csr, csrObject } from "../../fixtures/csr.js";
import { normalize, oneClearError, runNode, CTL, startUp, type UpServer } from "./fixtures.js";
import { tempFile } from "../../fixtures/temp-dir.js";

const GOLDEN = new URL("./golden/", import.meta.url).pathname;
const TYPES = ["json", "merge", "strategic"] as const;

let up: UpServer;
let caPem: string;
let csrPem: string;

/** One object of each seed kind that allows patching, named `<prefix>-<kind>`. */
function seedObjects(prefix: string): Record<string, unknown>[] {
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: `${prefix}-sa`, namespace: "default" }, secrets: [{ name: "first" }] },
    csrObject({ name: `${prefix}-csr`, request: csrPem, signerName: "platform.io/apiserver-client" }),
    { apiVersion: "certificates.platform.io/v1beta1", kind: "ClusterTrustBundle", metadata: { name: `${prefix}-bundle` }, spec: { trustBundle: caPem } },
    {
      apiVersion: "rbac.authorization.platform.io/v1",
      kind: "RoleBinding",
      metadata: { name: `${prefix}-rb`, namespace: "default" },
      roleRef: { apiGroup: "rbac.authorization.platform.io", kind: "ClusterRole", name: "view" },
      subjects: [{ kind: "User", name: "alice", apiGroup: "rbac.authorization.platform.io" }],
    },
    { apiVersion: "apps/v1", kind: "ControllerRevision", metadata: { name: `${prefix}-rev`, namespace: "default" }, revision: 1, data: { replicas: 1 } },
    {
      apiVersion: "events.platform.io/v1",
      kind: "Event",
      metadata: { name: `${prefix}-ev`, namespace: "default" },
      eventTime: "2024-01-01T00:00:00.000000Z",
      action: "Sync",
      reason: "Synced",
      note: "hello",
      type: "Normal",
      reportingController: "example.com/ctl",
      reportingInstance: "ctl-1",
      regarding: { apiVersion: "v1", kind: "ServiceAccount", name: "demo", namespace: "default" },
    },
  ];
}

const KINDS = [
  ["ServiceAccount", "sa", "serviceaccount"],
  ["CertificateSigningRequest", "csr", "certificatesigningrequest.certificates.platform.io"],
  ["ClusterTrustBundle", "bundle", "clustertrustbundle.certificates.platform.io"],
  ["RoleBinding", "rb", "rolebinding.rbac.authorization.platform.io"],
  ["ControllerRevision", "rev", "controllerrevision.apps"],
  ["Event", "ev", "event.events.platform.io"],
] as const;

const labelPatch = (type: (typeof TYPES)[number], value: string) =>
  type === "json" ? JSON.stringify([{ op: "add", path: "/metadata/labels", value: { via: value } }]) : JSON.stringify({ metadata: { labels: { via: value } } });

const yamlStream = (objects: Record<string, unknown>[]) => objects.map((o) => toYaml(o)).join("---\n");

beforeAll(async () => {
  up = await startUp();
  const { createTestAuthority } = await import("../../../src/testing.js");
  caPem = (await createTestAuthority()).caPem;
  csrPem = (await csr({ cn: "patch-test", o: ["devs"] })).pem;
  const all = [...TYPES.flatMap((t) => seedObjects(t)), ...seedObjects("kubectl"), ...seedObjects("ours"), ...seedObjects("misc"), seedObjects("golden")[0]!];
  const created = await up.ctl(["create", "-f", "-"], { stdin: yamlStream(all) });
  expect(created.stderr).toBe("");
  expect(created.code).toBe(0);
}, 120_000);

afterAll(async () => {
  expect(await up?.stop()).toBe(0);
});

describe("each patch type on each seed kind", () => {
  const cases = KINDS.flatMap(([kind, short, resource]) => TYPES.map((type) => [kind, type, short, resource] as const));
  it.concurrent.each(cases)("patches a %s with --type %s", async (_kind, type, short, resource) => {
    const name = `${type}-${short}`;
    const r = await up.ctl(["patch", resource, name, "--type", type, "-p", labelPatch(type, type)]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(`${resource}/${name} patched\n`);
    const label = await up.ctl(["get", resource, name, "-o", "jsonpath={.metadata.labels.via}"]);
    expect(label.stdout).toBe(type);
    // The same patch again changes nothing.
    expect((await up.ctl(["patch", resource, name, "--type", type, "-p", labelPatch(type, type)])).stdout).toBe(`${resource}/${name} patched (no change)\n`);
  });

  it.each([
    ["a CSR's spec", "csr", "misc-csr", '{"spec":{"signerName":"example.com/other"}}', /CertificateSigningRequest.* is invalid: spec.*immutable/],
    ["a ControllerRevision's data", "controllerrevision", "misc-rev", '{"data":{"replicas":2}}', /ControllerRevision.apps "misc-rev" is invalid: data: .*field is immutable/],
  ])("refuses to change %s with a clear error", async (_what, type, name, patch, message) => {
    const r = await up.ctl(["patch", type, name, "--type", "merge", "-p", patch]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toMatch(message);
  });

  it("takes YAML patches and patch files, and -f to name the object", async () => {
    const file = tempFile("p.yaml", "metadata:\n  annotations:\n    from: file\n");
    const manifest = tempFile("sa.yaml", toYaml(seedObjects("misc")[0]));
    expect((await up.ctl(["patch", "-f", manifest, "--patch-file", file])).stdout).toBe("serviceaccount/misc-sa patched\n");
    expect((await up.ctl(["patch", "sa/misc-sa", "-p", "metadata: {annotations: {inline: yaml}}"])).code).toBe(0);
    const annotations = JSON.parse((await up.ctl(["get", "sa", "misc-sa", "-o", "jsonpath={.metadata.annotations}"])).stdout);
    expect(annotations).toEqual({ from: "file", inline: "yaml" });
  });
});

describe("--local", () => {
  it.each([
    // New items of a list merged by key come first, as the server (and kubectl) order them.
    ["strategic", '{"secrets":[{"name":"second"}]}', ["second", "first"]],
    ["merge", '{"secrets":[{"name":"second"}]}', ["second"]],
    ["json", '[{"op":"add","path":"/secrets/-","value":{"name":"third"}}]', ["first", "third"]],
  ])("applies a %s patch to the file content without any server", async (type, patch, secrets) => {
    const file = tempFile("sa.yaml", toYaml(seedObjects("local")[0]));
    // The server named is unreachable: --local must not use it.
    const r = await runNode(CTL, ["-s", "http://127.0.0.1:1", "patch", "--local", "-f", file, "--type", type, "-p", patch, "-o", "json"]);
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout).secrets.map((s: { name: string }) => s.name)).toEqual(secrets);
  });

  it("prints YAML without -o and refuses strategic patches of kinds without a schema", async () => {
    const widget = tempFile("w.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n");
    const merged = await runNode(CTL, ["patch", "--local", "-f", widget, "--type", "merge", "-p", '{"spec":{"size":2}}']);
    expect(merged.stdout).toBe("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 2\n");
    const strategic = await runNode(CTL, ["patch", "--local", "-f", widget, "-p", '{"spec":{"size":2}}']);
    expect(strategic.code).toBe(1);
    expect(oneClearError(strategic)).toBe("error: strategic merge patch is not supported for Widget; use --type=merge or --type=json");
  });

  it("needs -f", async () => {
    const r = await runNode(CTL, ["patch", "--local", "sa", "x", "-p", "{}"]);
    expect(r.code).toBe(2);
    expect(oneClearError(r)).toMatch(/--local needs the objects from -f/);
  });
});

describe("dry runs and subresources", () => {
  it("stores nothing with --dry-run=server but shows the result", async () => {
    const before = JSON.parse((await up.ctl(["get", "sa", "misc-sa", "-o", "json"])).stdout);
    const r = await up.ctl(["patch", "sa", "misc-sa", "--dry-run=server", "-p", '{"metadata":{"labels":{"dry":"run"}}}', "-o", "jsonpath={.metadata.labels.dry}"]);
    expect(r.stdout).toBe("run");
    const line = await up.ctl(["patch", "sa", "misc-sa", "--dry-run=server", "-p", '{"metadata":{"labels":{"dry":"run"}}}']);
    expect(line.stdout).toBe("serviceaccount/misc-sa patched (server dry run)\n");
    const after = JSON.parse((await up.ctl(["get", "sa", "misc-sa", "-o", "json"])).stdout);
    expect(after.metadata.labels?.dry).toBeUndefined();
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion);
  });

  it.each([
    [["--dry-run=client"], "", "serviceaccount/misc-sa patched (dry run)\n"],
    [["--dry-run"], "W: --dry-run is deprecated and can be replaced with --dry-run=client.\n", "serviceaccount/misc-sa patched (dry run)\n"],
  ])("sends nothing with %j", async (flags, stderr, stdout) => {
    const r = await up.ctl(["patch", "sa", "misc-sa", ...flags, "-p", '{"metadata":{"labels":{"client":"dry"}}}']);
    expect([r.stderr, r.stdout]).toEqual([stderr, stdout]);
    expect((await up.ctl(["get", "sa", "misc-sa", "-o", "jsonpath={.metadata.labels.client}"])).stdout).toBe("");
  });

  it("patches a CSR's status through --subresource=status, which the main resource ignores", async () => {
    const status = JSON.stringify({ status: { conditions: [{ type: "Failed", status: "True", reason: "Testing", message: "set through status" }] } });
    expect((await up.ctl(["patch", "csr", "json-csr", "--type", "merge", "-p", status])).stdout).toBe(
      "certificatesigningrequest.certificates.platform.io/json-csr patched (no change)\n",
    );
    expect((await up.ctl(["patch", "csr", "json-csr", "--subresource=status", "--type", "merge", "-p", status])).stdout).toBe(
      "certificatesigningrequest.certificates.platform.io/json-csr patched\n",
    );
    const got = await up.ctl(["get", "csr", "json-csr", "-o", 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}']);
    expect(got.stdout).toBe("Testing");
  });

  it("says clearly that a kind has no such subresource", async () => {
    const r = await up.ctl(["patch", "csr", "json-csr", "--subresource=scale", "--type", "merge", "-p", "{}"]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toBe('error: the server does not serve the subresource "scale" for certificatesigningrequests.certificates.platform.io (it has: approval, status, revocation)');
  });
});

describe("output formats against golden files", () => {
  const patch = JSON.stringify([
    { op: "add", path: "/metadata/labels", value: { app: "golden", tier: "back" } },
    { op: "add", path: "/metadata/annotations", value: { note: "kept" } },
  ]);
  const templateFiles = () => ({
    jsonpath: join(GOLDEN, "template.jsonpath"),
    gotemplate: join(GOLDEN, "template.gotmpl"),
  });
  const FORMATS: [string, string[]][] = [
    ["json", ["-o", "json"]],
    ["json-managed-fields", ["-o", "json", "--show-managed-fields"]],
    ["yaml", ["-o", "yaml"]],
    ["name", ["-o", "name"]],
    ["jsonpath", ["-o", "jsonpath={.metadata.name} {.metadata.labels} {.secrets[*].name}"]],
    ["jsonpath-as-json", ["-o", "jsonpath-as-json={.metadata.labels}"]],
    ["jsonpath-file", ["-o", `jsonpath-file=${templateFiles().jsonpath}`]],
    ["go-template", ["-o", "go-template={{.metadata.name}}:{{range .secrets}} {{.name}}{{end}}"]],
    ["go-template-flag", ["-o", "go-template", "--template", "{{index .metadata.labels \"tier\"}}"]],
    ["go-template-file", ["-o", `go-template-file=${templateFiles().gotemplate}`]],
    ["template", ["-o", "template={{.kind}}/{{.metadata.name}}"]],
    ["templatefile", ["-o", `templatefile=${templateFiles().gotemplate}`]],
    ["missing-key", ["-o", "go-template={{.metadata.nope}}"]],
  ];

  it.concurrent.each(FORMATS)("prints %s as the golden file says", async (golden, flags) => {
    const r = await up.ctl(["patch", "sa", "golden-sa", "--type", "json", "-p", patch, ...flags]);
    expect(r.stderr).toBe("");
    const file = join(GOLDEN, `patch.${golden}.txt`);
    if (process.env.UPDATE_GOLDEN) writeFileSync(file, normalize(r.stdout));
    expect(normalize(r.stdout)).toBe(readFileSync(file, "utf8"));
  });

  it("fails on a missing key with --allow-missing-template-keys=false", async () => {
    const r = await up.ctl(["patch", "sa", "golden-sa", "--type", "merge", "-p", "{}", "-o", "go-template={{.metadata.nope}}", "--allow-missing-template-keys=false"]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toMatch(/map has no entry for key "nope"/);
  });
});

describe("the same patch by platformctl and by kubectl", () => {
  const PATCHES: Record<(typeof TYPES)[number], string> = {
    strategic: JSON.stringify({ metadata: { labels: { via: "s" } }, secrets: [{ name: "second" }] }),
    merge: JSON.stringify({ metadata: { annotations: { via: "m" } }, automountServiceAccountToken: false }),
    json: JSON.stringify([{ op: "add", path: "/secrets/-", value: { name: "third" } }, { op: "replace", path: "/secrets/0/name", value: "renamed" }]),
  };
  const RB_PATCHES: Record<(typeof TYPES)[number], string> = {
    strategic: JSON.stringify({ subjects: [{ kind: "Group", name: "devs", apiGroup: "rbac.authorization.platform.io" }] }),
    merge: JSON.stringify({ metadata: { labels: { a: "b" } } }),
    json: JSON.stringify([{ op: "add", path: "/subjects/-", value: { kind: "User", name: "bob", apiGroup: "rbac.authorization.platform.io" } }]),
  };

  /** The stored object minus what must differ between two objects and two field managers. */
  const comparable = (text: string) => {
    const o = JSON.parse(text);
    for (const k of ["name", "uid", "resourceVersion", "creationTimestamp", "managedFields"]) delete o.metadata[k];
    return JSON.stringify(o);
  };

  it.each(TYPES.flatMap((t) => [["serviceaccount", "sa", t, PATCHES[t]], ["rolebinding", "rb", t, RB_PATCHES[t]]] as const))(
    "stores byte-identical %s objects for a %s… %s patch",
    async (resource, short, type, patch) => {
      const ours = `ours-${short}`;
      const theirs = `kubectl-${short}`;
      const a = await up.ctl(["patch", resource, ours, "--type", type, "-p", patch]);
      const b = await up.kubectl(["patch", resource, theirs, "--type", type, "-p", patch]);
      expect([a.code, b.code]).toEqual([0, 0]);
      const [x, y] = await Promise.all([up.ctl(["get", resource, ours, "-o", "json"]), up.ctl(["get", resource, theirs, "-o", "json"])]);
      expect(comparable(x.stdout)).toBe(comparable(y.stdout));
    },
  );
});

describe("warnings", () => {
  it("prints server warnings and fails on them with --warnings-as-errors", async () => {
    const args = ["patch", "sa", "misc-sa", "--type", "merge", "--validate=warn", "-p", '{"bogusField":1,"metadata":{"labels":{"w":"1"}}}'];
    const plain = await up.ctl(args);
    expect(plain.code).toBe(0);
    expect(plain.stderr).toBe('Warning: unknown field "bogusField"\n');
    const strict = await up.ctl([...args, "--warnings-as-errors"]);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toBe('Warning: unknown field "bogusField"\nerror: 1 warning received and --warnings-as-errors is set\n');
  });

  it("refuses unknown fields by default (--validate=strict), as kubectl does", async () => {
    const r = await up.ctl(["patch", "sa", "misc-sa", "--type", "merge", "-p", '{"bogusField":1}']);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toMatch(/unknown field "bogusField"/);
  });
});

describe("bad input", () => {
  it.concurrent.each([
    ["a malformed patch", 1, /unable to parse the patch/, ["patch", "sa", "misc-sa", "-p", "{bad"]],
    ["a JSON patch that is no list", 1, /must be a list of operations/, ["patch", "sa", "misc-sa", "--type", "json", "-p", '{"op":"add"}']],
    ["an invalid JSON patch operation", 1, /error: /, ["patch", "sa", "misc-sa", "--type", "json", "-p", '[{"op":"jump","path":"/x"}]']],
    ["a missing patch file", 1, /unable to read patch file \/nonexistent\/p.json: ENOENT/, ["patch", "sa", "misc-sa", "--patch-file", "/nonexistent/p.json"]],
    ["a missing -f file", 1, /the path "\/nonexistent\/sa.yaml" does not exist/, ["patch", "-f", "/nonexistent/sa.yaml", "-p", "{}"]],
    ["an unknown object", 1, /serviceaccounts "nobody" not found/, ["patch", "sa", "nobody", "-p", "{}"]],
    ["an unknown type", 1, /the server doesn't have a resource type "widgets"/, ["patch", "widgets", "w", "-p", "{}"]],
    ["no patch", 2, /must specify -p\/--patch or --patch-file/, ["patch", "sa", "misc-sa"]],
    ["both patch sources", 2, /exclude each other/, ["patch", "sa", "misc-sa", "-p", "{}", "--patch-file", "x"]],
    ["an unknown patch type", 2, /--type must be one of \[json merge strategic\]/, ["patch", "sa", "misc-sa", "--type", "bogus", "-p", "{}"]],
    ["an unknown output", 2, /expected `--output` to be one of/, ["patch", "sa", "misc-sa", "-p", "{}", "-o", "xml"]],
    ["a bad dry-run value", 2, /Invalid dry-run value \(maybe\)/, ["patch", "sa", "misc-sa", "-p", "{}", "--dry-run=maybe"]],
    ["an unknown flag", 2, /unknown option '--bogus'/, ["patch", "sa", "misc-sa", "--bogus"]],
    ["-k with -f", 2, /--kustomize cannot be combined with -f\/--filename or -R\/--recursive/, ["patch", "-k", "dir", "-f", "x.yaml", "-p", "{}"]],
    ["-k with -R", 2, /--kustomize cannot be combined/, ["patch", "-k", "dir", "-R", "-p", "{}"]],
    ["-k alone", 2, /kustomize is not supported/, ["patch", "-k", "dir", "-p", "{}"]],
    ["a name without a type", 2, /you must specify the name of the misc-sa to patch/, ["patch", "misc-sa", "-p", "{}"]],
  ])("reports %s in one line with exit %i", async (_what, code, message, args) => {
    const r = await up.ctl(args);
    expect(r.code).toBe(code);
    expect(oneClearError(r)).toMatch(message);
  });

  it("says a failing JSON patch operation once, not again as its only cause", async () => {
    const r = await up.ctl(["patch", "sa", "misc-sa", "--type", "json", "-p", '[{"op":"remove","path":"/metadata/labels/zzz"}]']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: .*JSON patch operation 0 \(remove "\/metadata\/labels\/zzz"\): the path does not exist\n$/);
  });

  it("reports an unreachable server in one line, at once (no retries, as kubectl)", async () => {
    const started = Date.now();
    const r = await runNode(CTL, ["-s", "http://127.0.0.1:1", "patch", "sa", "x", "-p", "{}"]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toMatch(/connection refused/);
    // Five attempts with backoff took ~3 s; one attempt is the process's start.
    expect(Date.now() - started).toBeLessThan(1500);
  });
});
