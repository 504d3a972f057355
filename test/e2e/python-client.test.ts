// The official Python client (Debian's python3-kubernetes), unmodified, against `platform-ca apiserver` with
// `--group-suffix k8s.io` and its admin.conf: watch=True, pagination, bodies without kind, TokenReview, cascading
// deletes; and platformctl printing an object nested to the server's bound as YAML.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as fromYaml } from "yaml";
import { MAX_NESTING_DEPTH } from "../../src/plain-data.js";
import { csr } from "../fixtures/csr.js";
import { ensureBuilt } from "./apiserver-process.js";
import { PLATFORM_CA, PLATFORMCTL, REPO } from "../fixtures/repo.js";

const PYTHON = "/usr/bin/python3";

/** Runs a Python script with the kubernetes client loaded from admin.conf as `core`, `certs`, `authn`; its stdout is JSON. */
function python(adminConf: string, body: string, env: Record<string, string> = {}): Promise<any> {
  const script = `import json, os, sys\nfrom kubernetes import client, config, watch\nconfig.load_kube_config(config_file=sys.argv[1])\ncore = client.CoreV1Api()\ncerts = client.CertificatesV1Api()\nauthn = client.AuthenticationV1Api()\n${body}\n`;
  return new Promise((resolve, reject) => {
    execFile(PYTHON, ["-c", script, adminConf], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`python failed: ${stderr || err.message}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

function node(script: string, args: readonly string[], home: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [script, ...args], { env: { ...process.env, HOME: home, PLATFORMCONFIG: "" }, timeout: 60_000, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("the Python client against platform-ca apiserver --group-suffix k8s.io", () => {
  const dataDir = join(mkdtempSync(join(tmpdir(), "platform-ca-python-")), "data");
  const adminConf = join(dataDir, "admin.conf");
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    ensureBuilt();
    child = spawn(process.execPath, [PLATFORM_CA, "apiserver", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--group-suffix", "k8s.io"], { stdio: ["ignore", "pipe", "pipe"] });
    await new Promise<void>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error("no address within 30 s")), 30_000);
      child!.stdout!.on("data", (d) => {
        out += d;
        if (/listening on https:\/\/127\.0\.0\.1:\d+/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child!.once("exit", (code) => reject(new Error(`apiserver exited with ${code}`)));
    });
  }, 120_000);
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  });

  it("watches CSRs with watch=True and sees the ADDED event", async () => {
    const request = Buffer.from((await csr({ cn: "py-watch" })).pem).toString("base64");
    const out = await python(
      adminConf,
      `body = client.V1CertificateSigningRequest(metadata=client.V1ObjectMeta(name="py-watch"), spec=client.V1CertificateSigningRequestSpec(request=os.environ["CSR"], signer_name="example.com/py", usages=["client auth"]))
certs.create_certificate_signing_request(body)
seen = []
w = watch.Watch()
for event in w.stream(certs.list_certificate_signing_request, allow_watch_bookmarks=True, timeout_seconds=10):
    seen.append([event["type"], event["object"].metadata.name])
    if event["type"] == "ADDED": w.stop()
print(json.dumps(seen))`,
      { CSR: request },
    );
    expect(out).toContainEqual(["ADDED", "py-watch"]);
  });

  it("lists ServiceAccounts page by page with limit and _continue", async () => {
    const out = await python(
      adminConf,
      `for i in range(5): core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=f"page-{i}")))
names, pages, token = [], 0, None
while True:
    page = core.list_namespaced_service_account("default", limit=2, _continue=token)
    pages += 1
    names += [i.metadata.name for i in page.items]
    token = page.metadata._continue
    if not token: break
print(json.dumps({"names": names, "pages": pages}))`,
    );
    expect(out.names.filter((n: string) => n.startsWith("page-"))).toEqual(["page-0", "page-1", "page-2", "page-3", "page-4"]);
    expect(out.pages).toBeGreaterThanOrEqual(3);
  });

  it("creates a bare V1ServiceAccount (no kind, no apiVersion) and reviews its token with a TokenReview", async () => {
    const out = await python(
      adminConf,
      `sa = core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="bare")))
tr = core.create_namespaced_service_account_token("bare", "default", client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[])))
good = authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=tr.status.token)))
bad = authn.create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token="not-a-token")))
print(json.dumps({"kind": sa.kind, "apiVersion": sa.api_version, "uid": bool(sa.metadata.uid), "good": [good.status.authenticated, good.status.user.username], "bad": bad.status.authenticated}))`,
    );
    expect(out).toEqual({ kind: "ServiceAccount", apiVersion: "v1", uid: true, good: [true, "system:serviceaccount:default:bare"], bad: false });
  });

  it("creates, patches and reads back a V1ConfigMap with text and binary data; an immutable one refuses a change with 422", async () => {
    const out = await python(
      adminConf,
      `import base64
cm = core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm"), data={"a": "1"}, binary_data={"b": base64.b64encode(b"\\x00\\xff").decode()}))
core.patch_namespaced_config_map("py-cm", "default", {"data": {"a": "2"}, "immutable": True})
read = core.read_namespaced_config_map("py-cm", "default")
try:
    core.patch_namespaced_config_map("py-cm", "default", {"data": {"a": "3"}})
    refused = None
except client.exceptions.ApiException as e:
    refused = [e.status, json.loads(e.body)["reason"]]
print(json.dumps({"created": cm.data, "data": read.data, "binary": base64.b64decode(read.binary_data["b"]).hex(), "immutable": read.immutable, "refused": refused}))`,
    );
    expect(out).toEqual({ created: { a: "1" }, data: { a: "2" }, binary: "00ff", immutable: true, refused: [422, "Invalid"] });
  });

  it("deletes with propagation_policy Foreground and Orphan: the owner's dependent goes with it, or stays without the reference", async () => {
    const out = await python(
      adminConf,
      `import time
def owned(owner, child):
    sa = core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=owner)))
    ref = client.V1OwnerReference(api_version="v1", kind="ServiceAccount", name=owner, uid=sa.metadata.uid, block_owner_deletion=True)
    core.create_namespaced_secret("default", client.V1Secret(metadata=client.V1ObjectMeta(name=child, owner_references=[ref]), string_data={"k": "v"}))
def gone(read):
    for _ in range(100):
        try:
            read()
        except client.exceptions.ApiException as e:
            if e.status == 404:
                return True
            raise
        time.sleep(0.1)
    return False
owned("gc-fg", "gc-fg-child")
owned("gc-or", "gc-or-child")
marked = core.delete_namespaced_service_account("gc-fg", "default", propagation_policy="Foreground")
core.delete_namespaced_service_account("gc-or", "default", body=client.V1DeleteOptions(propagation_policy="Orphan"))
out = {
    "marked": marked.metadata.finalizers,
    "fgOwnerGone": gone(lambda: core.read_namespaced_service_account("gc-fg", "default")),
    "fgChildGone": gone(lambda: core.read_namespaced_secret("gc-fg-child", "default")),
    "orOwnerGone": gone(lambda: core.read_namespaced_service_account("gc-or", "default")),
    "orChildRefs": core.read_namespaced_secret("gc-or-child", "default").metadata.owner_references,
}
print(json.dumps(out))`,
    );
    expect(out).toEqual({ marked: ["foregroundDeletion"], fgOwnerGone: true, fgChildGone: true, orOwnerGone: true, orChildRefs: null });
  });

  it("platformctl prints a ControllerRevision nested to the bound as YAML", async () => {
    const depth = MAX_NESTING_DEPTH;
    const created = await python(
      adminConf,
      `data = "leaf"
for i in range(${depth - 1}): data = {"a": data}
api = client.ApiClient()
api.call_api("/apis/apps/v1/namespaces/default/controllerrevisions", "POST", body={"metadata": {"name": "deep"}, "revision": 1, "data": data}, auth_settings=["BearerToken"], _preload_content=False)
print(json.dumps("ok"))`,
    );
    expect(created).toBe("ok");
    const home = mkdtempSync(join(tmpdir(), "platformctl-home-"));
    const r = await node(PLATFORMCTL, ["--platformconfig", adminConf, "-n", "default", "get", "controllerrevisions", "deep", "-o", "yaml"], home);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    let data = fromYaml(r.stdout).data;
    let levels = 0;
    while (typeof data === "object") [data, levels] = [data.a, levels + 1];
    expect([levels, data]).toEqual([depth - 1, "leaf"]);
  });
});
