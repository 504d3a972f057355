import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { groupNames } from "../../src/api/group.js";
import { csr, csrObject } from "../fixtures/csr.js";
import { ensureBuilt, kubectlFails, kubectlFor, startApiserver, type ApiserverProcess, type Kubectl } from "./apiserver-process.js";

const csrManifest = (suffix: string, name: string, pem: string): string =>
  toYaml(csrObject({ names: groupNames(suffix), name, request: pem, signerName: `${suffix}/apiserver-client`, expirationSeconds: 86400 }));

const serviceAccountYaml = (name: string, team: string) => `apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: ${name}\n  labels:\n    team: ${team}\n`;

describe("kubectl against the embedded API server (platform.io)", () => {
  let server: ApiserverProcess;
  let kubectl: Kubectl;

  beforeAll(async () => {
    ensureBuilt();
    // Events expire after four seconds here (an hour by default), so that one test can watch one go.
    server = await startApiserver({ extraArgs: ["--event-ttl", "4s"] });
    kubectl = kubectlFor(server.address);
  }, 240_000);
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
  });

  it("lists an Event until --event-ttl has passed since it was written, then no longer", async () => {
    const event = "apiVersion: v1\nkind: Event\nmetadata:\n  name: short-lived\ninvolvedObject:\n  kind: ServiceAccount\n  name: ttl-test\n  namespace: default\nreason: Tested\nmessage: kept for four seconds\ntype: Normal\n";
    const written = Date.now();
    expect(kubectl(["create", "-f", "-"], event)).toContain("event/short-lived created");
    expect(kubectl(["get", "events"])).toMatch(/Normal\s+Tested\s+serviceaccount\/ttl-test\s+kept for four seconds/);
    while (kubectl(["get", "events", "--field-selector", "involvedObject.name=ttl-test", "-o", "name"]).includes("short-lived")) {
      expect(Date.now() - written, "the Event outlived --event-ttl").toBeLessThan(20_000);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(Date.now() - written).toBeGreaterThanOrEqual(4000);
    expect(kubectlFails(kubectl, ["get", "event", "short-lived"])).toContain('events "short-lived" not found');
  });

  it("cascades a delete through ownerReferences as --cascade says: background, foreground, orphan", async () => {
    const owned = (policy: string) => {
      kubectl(["create", "serviceaccount", `gc-${policy}`]);
      const uid = kubectl(["get", "sa", `gc-${policy}`, "-o", "jsonpath={.metadata.uid}"]);
      const secret = `apiVersion: v1\nkind: Secret\nmetadata:\n  name: gc-${policy}-token\n  ownerReferences:\n  - {apiVersion: v1, kind: ServiceAccount, name: gc-${policy}, uid: ${uid}, blockOwnerDeletion: true}\n`;
      expect(kubectl(["create", "-f", "-"], secret)).toContain(`secret/gc-${policy}-token created`);
    };
    const secretGone = () => !kubectl(["get", "secrets", "-o", "name"]).includes("gc-background-token");
    owned("background");
    expect(kubectl(["delete", "sa", "gc-background"])).toContain('serviceaccount "gc-background" deleted');
    for (const start = Date.now(); !secretGone(); await new Promise((r) => setTimeout(r, 100))) expect(Date.now() - start).toBeLessThan(10_000);
    // Foreground: kubectl waits for the owner, which goes only after its dependent.
    owned("foreground");
    expect(kubectl(["delete", "sa", "gc-foreground", "--cascade=foreground"])).toContain('serviceaccount "gc-foreground" deleted');
    expect(kubectlFails(kubectl, ["get", "secret", "gc-foreground-token"])).toContain('secrets "gc-foreground-token" not found');
    // Orphan: the dependent stays, without its reference.
    owned("orphan");
    expect(kubectl(["delete", "sa", "gc-orphan", "--cascade=orphan"])).toContain('serviceaccount "gc-orphan" deleted');
    expect(kubectlFails(kubectl, ["get", "sa", "gc-orphan"])).toContain("not found");
    expect(kubectl(["get", "secret", "gc-orphan-token", "-o", "jsonpath={.metadata.ownerReferences}"])).toBe("");
  });

  it("reports a cluster-scoped object that names a namespaced owner with upstream's OwnerRefInvalidNamespace Event, and keeps it", async () => {
    kubectl(["create", "serviceaccount", "gc-invalid-owner"]);
    const uid = kubectl(["get", "sa", "gc-invalid-owner", "-o", "jsonpath={.metadata.uid}"]);
    const role = `apiVersion: rbac.authorization.platform.io/v1\nkind: ClusterRole\nmetadata:\n  name: gc-invalid-owned\n  ownerReferences:\n  - {apiVersion: v1, kind: ServiceAccount, name: gc-invalid-owner, uid: ${uid}}\nrules: []\n`;
    expect(kubectl(["create", "-f", "-"], role)).toContain("clusterrole.rbac.authorization.platform.io/gc-invalid-owned created");
    const reported = () => kubectl(["get", "events", "-A", "--field-selector", "reason=OwnerRefInvalidNamespace", "-o", "jsonpath={range .items[*]}{.type} {.involvedObject.kind}/{.involvedObject.name}: {.message}{\"\\n\"}{end}"]);
    // Read once found: Events expire after four seconds on this server.
    let text = "";
    for (const start = Date.now(); !(text = reported()).includes("gc-invalid-owned"); await new Promise((r) => setTimeout(r, 100))) expect(Date.now() - start).toBeLessThan(10_000);
    expect(text).toContain(`Warning ClusterRole/gc-invalid-owned: ownerRef [v1/ServiceAccount, namespace: , name: gc-invalid-owner, uid: ${uid}] does not exist in namespace ""`);
    expect(kubectl(["get", "clusterrole", "gc-invalid-owned", "-o", "name"])).toContain("gc-invalid-owned");
  });

  it("deletes a Secret whose owner lives in another namespace, reporting upstream's OwnerRefInvalidNamespace in its own", async () => {
    kubectl(["create", "namespace", "gc-abroad"]);
    kubectl(["create", "serviceaccount", "gc-abroad-owner", "-n", "gc-abroad"]);
    const uid = kubectl(["get", "sa", "gc-abroad-owner", "-n", "gc-abroad", "-o", "jsonpath={.metadata.uid}"]);
    const dependent = `apiVersion: v1\nkind: Secret\nmetadata:\n  name: gc-abroad-owned\n  ownerReferences:\n  - {apiVersion: v1, kind: ServiceAccount, name: gc-abroad-owner, uid: ${uid}}\n`;
    expect(kubectl(["create", "-f", "-"], dependent)).toContain("secret/gc-abroad-owned created");
    const reported = () => kubectl(["get", "events", "-n", "default", "--field-selector", "reason=OwnerRefInvalidNamespace", "-o", "jsonpath={range .items[*]}{.type} {.involvedObject.kind}/{.involvedObject.name}: {.message}{\"\\n\"}{end}"]);
    // Read once found: Events expire after four seconds on this server.
    let text = "";
    for (const start = Date.now(); !(text = reported()).includes("gc-abroad-owned"); await new Promise((r) => setTimeout(r, 100))) expect(Date.now() - start).toBeLessThan(10_000);
    expect(text).toContain(`Warning Secret/gc-abroad-owned: ownerRef [v1/ServiceAccount, namespace: default, name: gc-abroad-owner, uid: ${uid}] does not exist in namespace "default"`);
    const kept = () => kubectl(["get", "secrets", "--field-selector", "metadata.name=gc-abroad-owned", "-o", "name"]);
    for (const start = Date.now(); kept().trim() !== ""; await new Promise((r) => setTimeout(r, 100))) expect(Date.now() - start).toBeLessThan(10_000);
    expect(kubectl(["get", "sa", "gc-abroad-owner", "-n", "gc-abroad", "-o", "name"]).trim()).toBe("serviceaccount/gc-abroad-owner");
  });

  it("creates ConfigMaps from literals and files, lists them with their entry count, and keeps an immutable one", () => {
    const dir = mkdtempSync(join(tmpdir(), "kubectl-cm-"));
    try {
      writeFileSync(join(dir, "app.properties"), "color=blue\n");
      writeFileSync(join(dir, "blob.bin"), Buffer.from([0, 0xff, 0x80]));
      expect(kubectl(["create", "configmap", "app", "--from-literal=mode=fast", `--from-file=${join(dir, "app.properties")}`, `--from-file=${join(dir, "blob.bin")}`])).toContain("configmap/app created");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(kubectl(["get", "cm", "app", "--no-headers"])).toMatch(/^app\s+3\s+/);
    expect(kubectl(["get", "configmap", "app", "-o", "jsonpath={.data.mode} {.data.app\\.properties}"])).toBe("fast color=blue\n");
    // Bytes that are not UTF-8 go to binaryData, base64-encoded.
    expect(kubectl(["get", "configmap", "app", "-o", "jsonpath={.binaryData.blob\\.bin}"])).toBe(Buffer.from([0, 0xff, 0x80]).toString("base64"));
    expect(kubectl(["patch", "configmap", "app", "-p", '{"immutable":true}'])).toContain("patched");
    expect(kubectlFails(kubectl, ["patch", "configmap", "app", "-p", '{"data":{"mode":"slow"}}'])).toContain("data: Forbidden: field is immutable when `immutable` is set");
    // kubectl checks the keys of `create configmap` itself; a manifest reaches the server's check.
    expect(kubectlFails(kubectl, ["create", "-f", "-"], 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {"a/b": x}\n')).toContain('ConfigMap "bad" is invalid: data[a/b]');
    expect(kubectl(["delete", "cm", "app"])).toContain('configmap "app" deleted');
  });

  it("lists the pods with kubectl get all (the `all` category, as upstream's Pods)", () => {
    const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: listed-by-all\nspec:\n  containers:\n  - {name: app, image: example.com/app:1}\n";
    expect(kubectl(["create", "-f", "-"], pod)).toContain("pod/listed-by-all created");
    expect(kubectl(["get", "all", "-o", "name"])).toContain("pod/listed-by-all");
    expect(kubectl(["api-resources", "--categories=all", "--no-headers"])).toMatch(/^pods\s+po\s+v1\s+true\s+Pod$/m);
  });

  it("discovers every resource with short names", () => {
    const out = kubectl(["api-resources", "--no-headers"]);
    expect(out).toMatch(/^certificatesigningrequests\s+csr\s+certificates\.platform\.io\/v1\s+false\s+CertificateSigningRequest$/m);
    expect(out).toMatch(/^serviceaccounts\s+sa\s+v1\s+true\s+ServiceAccount$/m);
    expect(out).toMatch(/^clustertrustbundles\s+certificates\.platform\.io\/v1beta1\s+false\s+ClusterTrustBundle$/m);
  });

  it("creates from a file and reads back as table, wide, json and yaml", () => {
    expect(kubectl(["create", "-f", "-"], serviceAccountYaml("reader", "a"))).toContain("serviceaccount/reader created");
    expect(kubectl(["get", "sa", "reader"])).toMatch(/^NAME\s+SECRETS\s+AGE\nreader\s+0\s+\d+s\n$/);
    expect(kubectl(["get", "sa", "reader", "-o", "wide"])).toMatch(/^reader\s/m);
    const json = JSON.parse(kubectl(["get", "sa", "reader", "-o", "json"]));
    expect(json).toMatchObject({ kind: "ServiceAccount", metadata: { name: "reader", namespace: "default", labels: { team: "a" } } });
    expect(kubectl(["get", "sa", "reader", "-o", "yaml"])).toContain(`uid: ${json.metadata.uid}`);
  });

  it("applies a manifest client-side, twice, changing it", () => {
    expect(kubectl(["apply", "-f", "-"], serviceAccountYaml("applied", "a"))).toContain("serviceaccount/applied created");
    expect(kubectl(["apply", "-f", "-"], serviceAccountYaml("applied", "b"))).toContain("serviceaccount/applied configured");
    expect(kubectl(["apply", "-f", "-"], serviceAccountYaml("applied", "b"))).toContain("serviceaccount/applied unchanged");
    expect(kubectl(["get", "sa", "applied", "-o", "jsonpath={.metadata.labels.team}"])).toBe("b");
  });

  it.each([
    ["json", '[{"op":"add","path":"/metadata/labels/via","value":"json"}]', "json"],
    ["merge", '{"metadata":{"labels":{"via":"merge"}}}', "merge"],
    ["strategic", '{"metadata":{"labels":{"via":"strategic"}}}', "strategic"],
  ])("patches with --type %s", (type, patch, via) => {
    kubectl(["create", "-f", "-"], serviceAccountYaml(`patched-${type}`, "a"));
    expect(kubectl(["patch", "sa", `patched-${type}`, "--type", type, "-p", patch])).toContain("patched");
    expect(kubectl(["get", "sa", `patched-${type}`, "-o", "jsonpath={.metadata.labels.via}"])).toBe(via);
  });

  it("reads a list over 128 KiB, which the server sends gzipped to it (Go asks for gzip)", () => {
    const secret = (i: number) => ({ apiVersion: "v1", kind: "Secret", metadata: { name: `big-${i}`, labels: { size: "big" } }, data: { blob: Buffer.alloc(24_000, i).toString("base64") } });
    const list = { apiVersion: "v1", kind: "List", items: Array.from({ length: 6 }, (_, i) => secret(i)) };
    expect(kubectl(["create", "-f", "-"], JSON.stringify(list))).toContain("secret/big-5 created");
    const got = JSON.parse(kubectl(["get", "secrets", "-l", "size=big", "-o", "json"]));
    expect(got.items.map((s: { metadata: { name: string } }) => s.metadata.name)).toEqual(["big-0", "big-1", "big-2", "big-3", "big-4", "big-5"]);
    expect(Buffer.from(got.items[5].data.blob, "base64")).toEqual(Buffer.alloc(24_000, 5));
  });

  it("diffs a manifest against the object it made as no difference, before and after an apply", () => {
    expect(kubectl(["create", "-f", "-"], serviceAccountYaml("diffed", "a"))).toContain("serviceaccount/diffed created");
    // kubectl diff exits 1 on a difference (the helper throws then): its dry-run patch carries `annotations: {}`.
    expect(kubectl(["diff", "-f", "-"], serviceAccountYaml("diffed", "a"))).toBe("");
    kubectl(["apply", "-f", "-"], serviceAccountYaml("diffed", "a"));
    expect(kubectl(["diff", "-f", "-"], serviceAccountYaml("diffed", "a"))).toBe("");
    // A real change is still one: exit 1, the new label in the diff.
    let changed: { status?: number; stdout?: string } = {};
    try {
      kubectl(["diff", "-f", "-"], serviceAccountYaml("diffed", "b"));
    } catch (err) {
      changed = err as { status?: number; stdout?: string };
    }
    expect(changed.status).toBe(1);
    expect(changed.stdout).toMatch(/^\+\s+team: b$/m);
  });

  it("describes an object", () => {
    kubectl(["create", "-f", "-"], serviceAccountYaml("described", "a"));
    expect(kubectl(["describe", "sa", "described"])).toMatch(/Name:\s+described[\s\S]*Labels:\s+team=a/);
  });

  it("creates and lists CSRs by short name with the CSR columns", async () => {
    const pem = (await csr({ cn: "alice", o: ["devs"] })).pem;
    expect(kubectl(["create", "-f", "-"], csrManifest("platform.io", "alice", pem))).toContain("certificatesigningrequest.certificates.platform.io/alice created");
    const out = kubectl(["get", "csr"]);
    expect(out).toMatch(/^NAME\s+AGE\s+SIGNERNAME\s+REQUESTOR\s+REQUESTEDDURATION\s+CONDITION$/m);
    expect(out).toMatch(/^alice\s+\d+s\s+platform\.io\/apiserver-client\s+local-admin\s+24h\s+Pending$/m);
    expect(kubectl(["get", "csr", "alice", "-o", "jsonpath={.spec.username}"])).toBe("local-admin");
  });

  it("watches with get -w and sees a change", async () => {
    kubectl(["create", "-f", "-"], serviceAccountYaml("watched", "a"));
    const watchedOutput = await new Promise<string>((resolve, reject) => {
      const child = spawn("kubectl", [...kubectl.baseArgs, "get", "sa", "watched", "-w", "--show-labels"], { stdio: ["ignore", "pipe", "ignore"] });
      let out = "";
      let labeled = false;
      const bound = setTimeout(() => child.kill("SIGKILL"), 20_000);
      child.stdout.on("data", (d) => {
        out += d;
        if (!labeled && /^watched\s/m.test(out)) {
          labeled = true;
          kubectl(["label", "sa", "watched", "seen=yes"]);
        }
        if (/^watched\s.*seen=yes/m.test(out)) child.kill("SIGTERM");
      });
      child.on("exit", () => {
        clearTimeout(bound);
        resolve(out);
      });
      child.on("error", reject);
    });
    expect(watchedOutput).toMatch(/^NAME\s+SECRETS\s+AGE\s+LABELS$/m);
    expect(watchedOutput).toMatch(/^watched\s+0\s+\d+s\s+team=a$/m);
    expect(watchedOutput).toMatch(/^watched\s+0\s+\d+s\s+seen=yes,team=a$/m);
  });

  it("deletes, and then reports NotFound", () => {
    kubectl(["create", "-f", "-"], serviceAccountYaml("doomed", "a"));
    expect(kubectl(["delete", "sa", "doomed"])).toContain('serviceaccount "doomed" deleted');
    expect(kubectlFails(kubectl, ["get", "sa", "doomed"])).toContain('serviceaccounts "doomed" not found');
  });

  it("deletes a namespace with what it holds, waiting until it is gone, and refuses to delete default", () => {
    expect(kubectl(["create", "namespace", "scratch"])).toContain("namespace/scratch created");
    expect(kubectl(["get", "namespace", "scratch", "-o", "jsonpath={.spec.finalizers}"])).toBe('["kubernetes"]');
    kubectl(["create", "-n", "scratch", "-f", "-"], serviceAccountYaml("inside", "a"));
    kubectl(["create", "secret", "generic", "inside", "-n", "scratch", "--from-literal=k=v"]);
    // kubectl waits for the namespace to be gone (--wait defaults to true).
    expect(kubectl(["delete", "namespace", "scratch", "--timeout=60s"])).toContain('namespace "scratch" deleted');
    expect(kubectlFails(kubectl, ["get", "namespace", "scratch"])).toContain('namespaces "scratch" not found');
    expect(kubectl(["get", "serviceaccounts,secrets", "--all-namespaces", "-o", "jsonpath={.items[*].metadata.namespace}"]).split(" ")).not.toContain("scratch");
    // A namespace made again with the name starts empty.
    kubectl(["create", "namespace", "scratch"]);
    expect(kubectl(["get", "serviceaccounts,secrets", "-n", "scratch", "-o", "name"])).toBe("");
    expect(kubectlFails(kubectl, ["delete", "namespace", "default"])).toContain('namespaces "default" is forbidden: this namespace may not be deleted');
  });

  it("shows the server's validation message for an invalid object", () => {
    const err = kubectlFails(kubectl, ["create", "-f", "-"], serviceAccountYaml("Not_Valid", "a"));
    expect(err).toContain('ServiceAccount "Not_Valid" is invalid');
    expect(err).toContain("metadata.name");
  });

  it("refuses unknown fields under --validate=strict with the server's message", () => {
    const err = kubectlFails(kubectl, ["create", "--validate=strict", "-f", "-"], `${serviceAccountYaml("strict", "a")}bogus: 1\n`);
    expect(err).toContain('unknown field "bogus"');
  });
});

describe("kubectl certificate approve|deny with the k8s.io suffix", () => {
  let server: ApiserverProcess;
  let kubectl: Kubectl;

  beforeAll(async () => {
    ensureBuilt();
    server = await startApiserver({ groupSuffix: "k8s.io" });
    kubectl = kubectlFor(server.address);
  }, 240_000);
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
  });

  it.each([
    ["approve", "Approved", "KubectlApprove"],
    ["deny", "Denied", "KubectlDeny"],
  ])("kubectl certificate %s sets the %s condition", async (verb, condition, reason) => {
    const name = `csr-${verb}`;
    kubectl(["create", "-f", "-"], csrManifest("k8s.io", name, (await csr({ cn: name })).pem));
    expect(kubectl(["certificate", verb, name])).toContain(`certificatesigningrequest.certificates.k8s.io/${name} ${verb === "approve" ? "approved" : "denied"}`);
    const conditions = JSON.parse(kubectl(["get", "csr", name, "-o", "jsonpath={.status.conditions}"]));
    expect(conditions).toEqual([expect.objectContaining({ type: condition, status: "True", reason })]);
    expect(conditions[0]).not.toHaveProperty("lastTransitionTime", "1970-01-01T00:00:00Z");
    expect(kubectl(["get", "csr", name])).toMatch(new RegExp(`^${name}\\s.*\\s${condition}$`, "m"));
  });
});
