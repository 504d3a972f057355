// platformctl end to end against `platform-ca up` (server and controllers): the everyday verbs and the inherited options.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { csr, csrObject } from "../fixtures/csr.js";
import { useUpServer, CTL, oneClearError, runNode } from "../cli/ctl/fixtures.js";
import { tempDir, tempFile } from "../fixtures/temp-dir.js";
import { serviceAccount } from "../fixtures/objects.js";

const exec = promisify(execFile);

const sa = (name: string, labels: Record<string, string> = {}, extra: Record<string, unknown> = {}) => toYaml(serviceAccount({ name, labels, extra }));

async function csrManifest(name: string, o: { cn: string; dns?: string[]; ip?: string[]; signer?: string; expirationSeconds?: number }): Promise<string> {
  const pem = (await csr({ cn: o.cn, o: ["devs"], dns: o.dns, ip: o.ip })).pem;
  return toYaml(csrObject({ name, request: pem, signerName: o.signer ?? "example.com/manual", ...(o.expirationSeconds && { expirationSeconds: o.expirationSeconds }) }));
}

const server = useUpServer();

describe("get", () => {
  beforeAll(async () => {
    await server.up.ctl(["create", "-f", "-"], { stdin: [sa("reader", { team: "a" }), sa("writer", { team: "b" })].join("---\n") });
    await server.up.ctl(["create", "-n", "platform-system", "-f", "-"], { stdin: sa("system-one", { team: "a" }) });
    // The serviceaccount controller's `default` is listed too: wait for it rather than race it.
    for (let i = 0; i < 200 && (await server.up.ctl(["get", "sa", "default", "-o", "name"])).code !== 0; i++) await new Promise((r) => setTimeout(r, 50));
  });

  it("prints the server's table, aligned", async () => {
    const r = await server.up.ctl(["get", "sa"]);
    // `default` is the serviceaccount controller's.
    expect(r.stdout).toMatch(/^NAME\s+SECRETS\s+AGE\ndefault\s+0\s+\d+s\nreader\s+0\s+\d+s\nwriter\s+0\s+\d+s\n$/);
  });

  it.each([
    [["get", "sa", "-l", "team=a", "-o", "name"], "serviceaccount/reader\n"],
    [["get", "sa", "--field-selector", "metadata.name=writer", "-o", "name"], "serviceaccount/writer\n"],
    [["get", "serviceaccounts", "reader", "writer", "-o", "jsonpath={.items[*].metadata.name}"], "reader writer"],
    [["get", "sa/reader", "-o", "jsonpath={.metadata.labels.team}"], "a"],
    [["get", "sa", "-A", "-l", "team=a", "-o", "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}"], "default/reader platform-system/system-one "],
    [["get", "ServiceAccount.v1", "reader", "-o", "name"], "serviceaccount/reader\n"],
  ])("%j prints %j", async (args, expected) => {
    const r = await server.up.ctl(args);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe(expected);
  });

  it("adds the namespace column with -A and labels with --show-labels", async () => {
    const r = await server.up.ctl(["get", "sa", "-A", "-l", "team", "--show-labels"]);
    expect(r.stdout).toMatch(/^NAMESPACE\s+NAME\s+SECRETS\s+AGE\s+LABELS\n/);
    expect(r.stdout).toMatch(/^platform-system\s+system-one\s+0\s+\d+s\s+team=a$/m);
  });

  it("says when nothing is found, on stderr", async () => {
    const r = await server.up.ctl(["get", "sa", "-l", "team=none"]);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, "", "No resources found in default namespace.\n"]);
  });

  it("prints one List for -o json of several objects", async () => {
    const list = JSON.parse((await server.up.ctl(["get", "sa", "-o", "json"])).stdout);
    expect(list).toMatchObject({ apiVersion: "v1", kind: "List", metadata: { resourceVersion: "" } });
    expect(list.items.map((i: { metadata: { name: string } }) => i.metadata.name)).toEqual(["default", "reader", "writer"]);
  });

  it("watches: prints rows as changes arrive, until --request-timeout", async () => {
    const watching = server.up.ctl(["get", "sa", "-w", "--request-timeout", "4s"]);
    await new Promise((r) => setTimeout(r, 1500));
    await server.up.ctl(["create", "-f", "-"], { stdin: sa("arrived-later") });
    const r = await watching;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^NAME\s+SECRETS\s+AGE\n(.*\n)*arrived-later\s+0\s+\d+s\n/);
  });

  it("resolves types through discovery and caches the documents in --cache-dir", async () => {
    const cacheDir = tempDir();
    expect((await server.up.ctl(["get", "csr", "--cache-dir", cacheDir])).code).toBe(0);
    const [serverDir] = readdirSync(join(cacheDir, "discovery"));
    const cached = JSON.parse(readFileSync(join(cacheDir, "discovery", serverDir!, "resources.json"), "utf8"));
    expect(cached.resources.some((r: { plural: string; shortNames: string[] }) => r.plural === "certificatesigningrequests" && r.shortNames.includes("csr"))).toBe(true);
  });
});

describe("describe", () => {
  it("shows a CSR's requester, signer, duration, subject, SANs, usages and conditions", async () => {
    await server.up.ctl(["create", "-f", "-"], { stdin: await csrManifest("described", { cn: "carol", dns: ["carol.example"], ip: ["10.1.2.3"], expirationSeconds: 3600 }) });
    await server.up.ctl(["certificate", "approve", "described"]);
    const r = await server.up.ctl(["describe", "csr", "described"]);
    expect(r.stdout).toMatch(/^Name:\s+described$/m);
    expect(r.stdout).toMatch(/^Labels:\s+<none>$/m);
    expect(r.stdout).toMatch(/^CreationTimestamp:\s+\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} \+0000$/m);
    expect(r.stdout).toMatch(/^Requesting User:\s+platform-ca:admin$/m);
    expect(r.stdout).toMatch(/^Signer:\s+example.com\/manual$/m);
    expect(r.stdout).toMatch(/^Requested Duration:\s+60m$/m);
    expect(r.stdout).toMatch(/^Usages:\s+digital signature, client auth$/m);
    expect(r.stdout).toMatch(/^Status:\s+Approved$/m);
    expect(r.stdout).toMatch(/^\s+Common Name:\s+carol$/m);
    expect(r.stdout).toMatch(/^\s+Organization:\s+devs$/m);
    expect(r.stdout).toMatch(/^\s+DNS Names:\s+carol.example$/m);
    expect(r.stdout).toMatch(/^\s+IP Addresses:\s+10.1.2.3$/m);
    expect(r.stdout).toMatch(/^\s+Approved\s+True\s+PlatformctlApprove\s+This CSR was approved by platformctl certificate approve\./m);
  });
});

describe("create, apply and delete", () => {
  it("creates from stdin, refusing a second create", async () => {
    expect((await server.up.ctl(["create", "-f", "-"], { stdin: sa("created-once") })).stdout).toBe("serviceaccount/created-once created\n");
    const again = await server.up.ctl(["create", "-f", "-"], { stdin: sa("created-once") });
    expect(again.code).toBe(1);
    expect(oneClearError(again)).toMatch(/serviceaccounts "created-once" already exists/);
  });

  it("applies: created, configured, unchanged, and removes what the manifest dropped", async () => {
    const key = "platformctl.platform.io/last-applied-configuration";
    const v1 = sa("applied", { team: "a", extra: "x" });
    const v2 = sa("applied", { team: "b" });
    expect((await server.up.ctl(["apply", "-f", "-"], { stdin: v1 })).stdout).toBe("serviceaccount/applied created\n");
    // Someone else's label survives the next apply.
    await server.up.ctl(["patch", "sa", "applied", "-p", '{"metadata":{"labels":{"other":"kept"}}}']);
    expect((await server.up.ctl(["apply", "-f", "-"], { stdin: v2 })).stdout).toBe("serviceaccount/applied configured\n");
    expect((await server.up.ctl(["apply", "-f", "-"], { stdin: v2 })).stdout).toBe("serviceaccount/applied unchanged\n");
    const got = JSON.parse((await server.up.ctl(["get", "sa", "applied", "-o", "json"])).stdout);
    expect(got.metadata.labels).toEqual({ team: "b", other: "kept" });
    expect(JSON.parse(got.metadata.annotations[key])).toMatchObject({ metadata: { name: "applied", labels: { team: "b" } } });
  });

  it("deletes by name, by file and by selector, and tolerates absence with --ignore-not-found", async () => {
    const file = tempFile("d.yaml", [sa("gone-1", { del: "yes" }), sa("gone-2", { del: "yes" }), sa("gone-3")].join("---\n"));
    await server.up.ctl(["create", "-f", file]);
    expect((await server.up.ctl(["delete", "sa", "gone-3"])).stdout).toBe('serviceaccount "gone-3" deleted\n');
    expect((await server.up.ctl(["delete", "sa", "-l", "del=yes"])).stdout).toBe('serviceaccount "gone-1" deleted\nserviceaccount "gone-2" deleted\n');
    expect((await server.up.ctl(["delete", "-f", file, "--ignore-not-found"])).stdout).toBe("");
    const missing = await server.up.ctl(["delete", "sa", "gone-3"]);
    expect(missing.code).toBe(1);
    expect(oneClearError(missing)).toMatch(/serviceaccounts "gone-3" not found/);
  });
});

describe("certificate approve and deny", () => {
  beforeAll(async () => {
    const docs = await Promise.all(["to-approve", "to-deny", "approved-then-deny"].map((n) => csrManifest(n, { cn: n })));
    await server.up.ctl(["create", "-f", "-"], { stdin: docs.join("---\n") });
  });

  it("approves once; again is a no-op; --force writes again", async () => {
    expect((await server.up.ctl(["certificate", "approve", "to-approve"])).stdout).toBe("certificatesigningrequest.certificates.platform.io/to-approve approved\n");
    const rv = (await server.up.ctl(["get", "csr", "to-approve", "-o", "jsonpath={.metadata.resourceVersion}"])).stdout;
    expect((await server.up.ctl(["certificate", "approve", "to-approve"])).stdout).toBe("certificatesigningrequest.certificates.platform.io/to-approve approved\n");
    expect((await server.up.ctl(["get", "csr", "to-approve", "-o", "jsonpath={.metadata.resourceVersion}"])).stdout).toBe(rv);
    expect((await server.up.ctl(["certificate", "approve", "to-approve", "--force"])).code).toBe(0);
    const conditions = JSON.parse((await server.up.ctl(["get", "csr", "to-approve", "-o", "jsonpath={.status.conditions}"])).stdout);
    expect(conditions).toEqual([expect.objectContaining({ type: "Approved", status: "True", reason: "PlatformctlApprove", message: "This CSR was approved by platformctl certificate approve." })]);
  });

  it("denies, and refuses the opposite decision either way", async () => {
    expect((await server.up.ctl(["certificate", "deny", "to-deny"])).stdout).toBe("certificatesigningrequest.certificates.platform.io/to-deny denied\n");
    const approveDenied = await server.up.ctl(["certificate", "approve", "to-deny", "--force"]);
    expect(approveDenied.code).toBe(1);
    expect(oneClearError(approveDenied)).toBe('error: certificate signing request "to-deny" is already Denied');
    await server.up.ctl(["certificate", "approve", "approved-then-deny"]);
    const denyApproved = await server.up.ctl(["certificate", "deny", "approved-then-deny"]);
    expect(oneClearError(denyApproved)).toBe('error: certificate signing request "approved-then-deny" is already Approved');
    expect((await server.up.kubectl(["get", "csr", "to-deny", "-o", "jsonpath={.status.conditions[0].reason}"])).stdout).toBe("PlatformctlDeny");
  });

  it("refuses objects that are not CSRs and unknown names", async () => {
    const notFound = await server.up.ctl(["certificate", "approve", "nobody"]);
    expect(oneClearError(notFound)).toMatch(/certificatesigningrequests.* "nobody" not found/);
  });
});

/** Approves or denies the CSR `name` as soon as it exists (a request command is creating it meanwhile). */
async function decideOnceCreated(name: string, verb: "approve" | "deny"): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await server.up.ctl(["certificate", verb, name])).code === 0) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`CSR ${name} never appeared`);
}

describe("certificate request", () => {
  it("generates a key, waits while the CSR is approved and issued, and writes both files", async () => {
    const dir = tempDir();
    const [certOut, keyOut] = [join(dir, "dave.crt"), join(dir, "dave.key")];
    const requesting = server.up.ctl(["certificate", "request", "dave", "--cn", "dave", "--o", "devs", "--dns", "dave.example", "--key-type", "rsa2048", "--usages", "digital signature,key encipherment,client auth", "--expiration-seconds", "3600", "--wait", "--timeout", "60s", "--cert-out", certOut, "--key-out", keyOut]);
    // Approve once the CSR exists; the controller signs it.
    await decideOnceCreated("dave", "approve");
    const r = await requesting;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("certificatesigningrequest.certificates.platform.io/dave created\n");
    expect(r.stderr).toMatch(/^waiting for CSR dave to be approved \(signer platform.io\/apiserver-client\)\n/);
    expect(statSync(keyOut).mode & 0o777).toBe(0o600);
    const verify = await exec("openssl", ["verify", "-CAfile", server.up.caFile, certOut]);
    expect(verify.stdout).toContain(": OK");
    const text = (await exec("openssl", ["x509", "-noout", "-text", "-in", certOut])).stdout;
    expect(text).toMatch(/Subject: O\s?=\s?devs, CN\s?=\s?dave/);
    expect(text).toContain("DNS:dave.example");
    const modulus = async (args: string[]) => (await exec("openssl", args)).stdout;
    expect(await modulus(["rsa", "-noout", "-modulus", "-in", keyOut])).toBe(await modulus(["x509", "-noout", "-modulus", "-in", certOut]));
  });

  it("ends with the reason when the CSR is denied", async () => {
    const dir = tempDir();
    const requesting = server.up.ctl(["certificate", "request", "erin", "--cn", "erin", "--wait", "--timeout", "60s", "--key-out", join(dir, "erin.key")]);
    await decideOnceCreated("erin", "deny");
    const r = await requesting;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error: certificate signing request erin was denied: PlatformctlDeny: This CSR was denied by platformctl certificate deny.");
  });

  it("times out clearly", async () => {
    const r = await server.up.ctl(["certificate", "request", "frank", "--cn", "frank", "--wait", "--timeout", "2s", "--key-out", join(tempDir(), "k")]);
    expect(r.code).toBe(1);
    expect(oneClearError(r.stderr.includes("waiting") ? { ...r, stderr: r.stderr.split("\n").slice(1).join("\n") } : r)).toBe(
      "error: timed out after 2s waiting for certificate signing request frank to be approved",
    );
  });

  it.each([
    [["--cn", "x"], /--key-out is required/],
    [["--key-out", "k", "--cert-out", "c"], /--cert-out needs --wait/],
    [["--key-out", "k", "--key-type", "dsa"], /expected `--key-type` to be one of p256/],
    [["--key-out", "k", "--usages", "flying"], /expected `--usages` to be a comma-separated list/],
    [["--key-out", "k", "--expiration-seconds", "60"], /expected `--expiration-seconds` to be whole seconds ≥ 600/],
    [["--key-out", "k", "--wait", "--timeout", "later"], /expected `--timeout` to be a duration/],
  ])("refuses %j as a usage error", async (flags, message) => {
    const r = await server.up.ctl(["certificate", "request", "bad", ...flags]);
    expect(r.code).toBe(2);
    expect(oneClearError(r)).toMatch(message);
  });
});

describe("identity", () => {
  it("shows who the server sees, as a table", async () => {
    const r = await server.up.ctl(["auth", "whoami"]);
    expect(r.stdout).toBe("ATTRIBUTE   VALUE\nUsername    platform-ca:admin\nGroups      [system:masters system:authenticated]\n");
  });

  it("passes --as, --as-group and --as-uid through to SelfSubjectReview", async () => {
    const r = await server.up.ctl(["auth", "whoami", "--as", "grace", "--as-group", "devs", "--as-group", "ops", "--as-uid", "u-42", "-o", "json"]);
    expect(JSON.parse(r.stdout).status.userInfo).toEqual({ username: "grace", uid: "u-42", groups: ["devs", "ops", "system:authenticated"] });
  });

  it("auth can-i: yes (exit 0) for the administrator, no (exit 1) for others, nothing printed with -q", async () => {
    const yes = await server.up.ctl(["auth", "can-i", "delete", "csr"]);
    expect([yes.code, yes.stdout, yes.stderr]).toEqual([0, "yes\n", "Warning: resource 'certificatesigningrequests' is not namespace scoped in group 'certificates.platform.io'\n"]);
    const no = await server.up.ctl(["auth", "can-i", "delete", "certificatesigningrequests", "-A", "--as", "nobody"]);
    expect([no.code, no.stdout, no.stderr]).toEqual([1, "no\n", ""]);
    expect(await server.up.ctl(["auth", "can-i", "create", "sa", "-q", "--as", "nobody"])).toEqual({ code: 1, stdout: "", stderr: "" });
    expect((await server.up.ctl(["auth", "can-i", "get", "/healthz", "--as", "nobody"])).stdout).toBe("yes\n");
    expect((await server.up.ctl(["auth", "can-i", "get", "/metrics", "--as", "nobody"])).code).toBe(1);
    const usage = await server.up.ctl(["auth", "can-i", "get"]);
    expect([usage.code, oneClearError(usage)]).toEqual([2, "error: you must specify two arguments: verb resource or verb resource/resourceName."]);
  });

  it("auth can-i for a user bound to read CSRs: get yes, delete no", async () => {
    const rbac = "rbac.authorization.platform.io";
    const role = { kind: "ClusterRole", apiVersion: `${rbac}/v1`, metadata: { name: "csr-reader" }, rules: [{ apiGroups: ["certificates.platform.io"], resources: ["certificatesigningrequests"], verbs: ["get", "list", "watch"] }] };
    const binding = { kind: "ClusterRoleBinding", apiVersion: `${rbac}/v1`, metadata: { name: "csr-reader" }, roleRef: { apiGroup: rbac, kind: "ClusterRole", name: "csr-reader" }, subjects: [{ kind: "User", apiGroup: rbac, name: "csr-reader" }] };
    const asReader = ["-A", "--as", "csr-reader"];
    expect((await server.up.ctl(["auth", "can-i", "get", "csr", ...asReader])).code).toBe(1);
    expect((await server.up.ctl(["create", "-f", "-"], { stdin: [toYaml(role), toYaml(binding)].join("---\n") })).code).toBe(0);
    // The authorizer follows RBAC objects through a watch: the grant counts a moment after the write.
    let r = await server.up.ctl(["auth", "can-i", "get", "csr/some-name", ...asReader]);
    for (let i = 0; i < 50 && r.code !== 0; i++) r = await server.up.ctl(["auth", "can-i", "get", "csr/some-name", ...asReader]);
    expect([r.code, r.stdout]).toEqual([0, "yes\n"]);
    expect(await server.up.ctl(["auth", "can-i", "list", "CertificateSigningRequest.certificates.platform.io", ...asReader])).toMatchObject({ code: 0, stdout: "yes\n" });
    expect(await server.up.ctl(["auth", "can-i", "delete", "csr", ...asReader])).toMatchObject({ code: 1, stdout: "no\n" });
    expect(await server.up.ctl(["auth", "can-i", "update", "csr", "--subresource", "approval", ...asReader])).toMatchObject({ code: 1, stdout: "no\n" });
  });

  it("gets a clear 401 for basic authentication", async () => {
    const r = await runNode(CTL, ["-s", server.up.address, "--certificate-authority", server.up.caFile, "--username", "a", "--password", "b", "get", "sa"]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toBe("error: Unauthorized: basic authentication is not supported");
  });
});

describe("inherited options", () => {
  it.each([
    [["--version"], "Client Version: v0.1.0\n"],
    [["version", "--client"], "Client Version: v0.1.0\n"],
    [["get", "sa", "--version"], "Client Version: v0.1.0\n"],
  ])("%j prints the version", async (args, expected) => {
    const r = await runNode(CTL, args);
    expect([r.code, r.stdout]).toEqual([0, expected]);
  });

  it("prints the raw version as JSON, and the server's with version", async () => {
    expect(JSON.parse((await runNode(CTL, ["--version=raw"])).stdout)).toMatchObject({ major: "0", minor: "1", gitVersion: "v0.1.0" });
    expect((await server.up.ctl(["version"])).stdout).toBe("Client Version: v0.1.0\nServer Version: v1.32.0-platform-ca (platform-ca v0.1.0)\n");
  });

  it("checks --match-server-version against the server", async () => {
    expect((await server.up.ctl(["get", "sa", "--match-server-version", "-o", "name"])).code).toBe(0);
    const r = await server.up.ctl(["get", "sa", "--match-server-version", "--version=v9.9.9"]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toBe("error: server version (v0.1.0) differs from client version (v9.9.9); --match-server-version requires them to be equal");
  });

  it.each([
    ["cpu", "nodes"],
    ["heap", "head"],
  ])("writes a %s profile as V8 JSON to --profile-output", async (kind, field) => {
    const out = join(tempDir(), `p.${kind}`);
    expect((await server.up.ctl(["get", "sa", "--profile", kind, "--profile-output", out])).code).toBe(0);
    expect(JSON.parse(readFileSync(out, "utf8"))).toHaveProperty(field);
  });

  it.each(["goroutine", "mutex", "bogus"])("refuses --profile %s", async (kind) => {
    const r = await server.up.ctl(["get", "sa", "--profile", kind]);
    expect(r.code).toBe(2);
    expect(oneClearError(r)).toMatch(/expected `--profile` to be/);
  });

  it("accepts and ignores the storage-driver options", async () => {
    const r = await server.up.ctl(["get", "sa", "reader", "-o", "name", "--storage-driver-db", "x", "--storage-driver-host", "h:1", "--storage-driver-secure", "--storage-driver-buffer-duration", "1m0s", "--storage-driver-user", "u", "--storage-driver-password", "p", "--storage-driver-table", "t"]);
    expect([r.code, r.stdout]).toEqual([0, "serviceaccount/reader\n"]);
  });

  it("takes defaults and aliases from --platformrc, unless PLATFORMRC=off", async () => {
    const rc = tempFile("platformrc", "kind: Preference\ndefaults:\n- command: get\n  options:\n  - name: output\n    default: name\naliases:\n- name: sas\n  command: get\n  prependArgs: [serviceaccounts, reader]\n");
    expect((await server.up.ctl(["--platformrc", rc, "get", "sa", "writer"])).stdout).toBe("serviceaccount/writer\n");
    expect((await server.up.ctl(["sas", "--platformrc", rc])).stdout).toBe("serviceaccount/reader\n");
    expect((await server.up.ctl(["get", "sa", "writer"], { env: { PLATFORMRC: rc } })).stdout).toBe("serviceaccount/writer\n");
    expect((await server.up.ctl(["--platformrc", rc, "get", "sa", "writer"], { env: { PLATFORMRC: "off" } })).stdout).toMatch(/^NAME\s+SECRETS/);
    const bad = await server.up.ctl(["--platformrc", tempFile("rc", "kind: Nope"), "get", "sa"]);
    expect(bad.code).toBe(1);
    expect(oneClearError(bad)).toMatch(/expected a document with kind: Preference/);
  });

  it("bounds a request with --request-timeout and refuses a malformed one", async () => {
    const r = await server.up.ctl(["get", "sa", "--request-timeout", "soon"]);
    expect(r.code).toBe(2);
    expect(oneClearError(r)).toMatch(/expected `--request-timeout` to be 0, whole seconds, or a duration/);
  });

  it("works with --disable-compression and namespaces from -n", async () => {
    const r = await server.up.ctl(["get", "sa", "--disable-compression", "-n", "platform-system", "-o", "name", "-l", "team"]);
    expect(r.stdout).toBe("serviceaccount/system-one\n");
  });
});

describe("discovery verbs and completion", () => {
  it("lists the resource types", async () => {
    const r = await server.up.ctl(["api-resources"]);
    expect(r.stdout).toMatch(/^NAME\s+SHORTNAMES\s+APIVERSION\s+NAMESPACED\s+KIND$/m);
    expect(r.stdout).toMatch(/^certificatesigningrequests\s+csr\s+certificates.platform.io\/v1\s+false\s+CertificateSigningRequest$/m);
    expect(r.stdout).toMatch(/^certificaterevocations\s+certrev\s+certificates.platform.io\/v1\s+false\s+CertificateRevocation$/m);
    expect((await server.up.ctl(["api-resources", "-o", "name", "--api-group", "certificates.platform.io"])).stdout).toBe(
      "certificaterevocations.certificates.platform.io\ncertificatesigningrequests.certificates.platform.io\nclustertrustbundles.certificates.platform.io\n",
    );
  });

  it.each(["bash", "zsh"])("prints a %s completion script the shell accepts", async (shell) => {
    const r = await runNode(CTL, ["completion", shell]);
    const file = tempFile(`c.${shell}`, r.stdout);
    await exec("bash", ["-n", file]);
    expect(r.stdout).toContain("complete -o default -F _platformctl platformctl");
  });

  it("completes commands, subcommands, flags and resource types in bash", async () => {
    const script = tempFile("c.bash", (await runNode(CTL, ["completion", "bash"])).stdout);
    const bin = tempDir();
    writeFileSync(join(bin, "platformctl"), `#!/bin/sh\nexec ${process.execPath} ${CTL} --platformconfig ${server.up.adminConf} "$@"\n`, { mode: 0o755 });
    const complete = async (line: string) => {
      const words = line.split(" ");
      const cmd = `source ${script}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _platformctl; echo "\${COMPREPLY[*]}"`;
      return (await exec("bash", ["-c", cmd], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, HOME: server.up.home } })).stdout.trim();
    };
    expect((await complete("platformctl ge")).split(" ")).toEqual(["get"]);
    expect((await complete("platformctl certificate ")).split(" ").sort()).toEqual(["approve", "deny", "inspect", "request", "revoke"]);
    expect((await complete("platformctl patch --ty")).split(" ")).toEqual(["--type"]);
    expect((await complete("platformctl get certificates")).split(" ")).toEqual(["certificatesigningrequests.certificates.platform.io"]);
    expect((await complete("platformctl get sa rea")).split(" ")).toEqual(["reader"]);
  });

  it("shows help with examples for every command", async () => {
    for (const args of [["get"], ["patch"], ["certificate", "request"], ["certificate", "approve"], ["auth", "whoami"], ["auth", "can-i"], ["apply"], ["describe"], ["create"], ["delete"], ["completion"]]) {
      const r = await runNode(CTL, [...args, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/Usage: platformctl/);
      if (!["whoami"].includes(args.at(-1)!)) expect(r.stdout).toMatch(/Examples?:|platformctl /);
    }
  });
});

describe("bad input everywhere", () => {
  it.each([
    [["get"], 2, /you must specify the type of resource to get/],
    [["get", "sa", "-o", "bogus"], 2, /expected `--output` to be one of/],
    [["get", "widgets"], 1, /the server doesn't have a resource type "widgets"/],
    [["nothing-like-this"], 2, /unknown command "nothing-like-this"/],
    [["create", "-f", "/nonexistent.yaml"], 1, /the path "\/nonexistent.yaml" does not exist/],
    [["create"], 2, /must specify -f\/--filename/],
    [["completion", "tcsh"], 2, /unsupported shell type "tcsh": use bash, zsh, fish/],
    [["get", "sa", "--group-suffix", "not a suffix"], 2, /groupSuffix/],
  ])("%j fails in one line with exit %i", async (args, code, message) => {
    const r = await server.up.ctl(args);
    expect(r.code).toBe(code);
    expect(oneClearError(r)).toMatch(message);
  });

  it("reports a context that does not exist", async () => {
    const r = await server.up.ctl(["get", "sa", "--context", "elsewhere"]);
    expect(r.code).toBe(1);
    expect(existsSync(server.up.adminConf)).toBe(true);
    expect(oneClearError(r)).toMatch(/elsewhere/);
  });
});
