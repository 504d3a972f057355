// `platform-ca credential` as an exec credential plugin: the ExecCredential protocol, the CSR round trip with the
// controllers of `up` signing, the certificate cache and its renewal, and kubectl and platformctl using it with no static credentials.
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { execApiVersion } from "../../src/cli/commands/credential.js";
import { useUpServer, CTL, oneClearError, PLATFORM_CA, runNode, type Run } from "../cli/ctl/fixtures.js";
import { tempDir, tempFile } from "../fixtures/temp-dir.js";

const exec = promisify(execFile);

const RBAC = `apiVersion: rbac.authorization.platform.io/v1
kind: ClusterRole
metadata: {name: csr-reader}
rules:
- apiGroups: [certificates.platform.io]
  resources: [certificatesigningrequests]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.platform.io/v1
kind: ClusterRoleBinding
metadata: {name: testers-read-csrs}
roleRef: {apiGroup: rbac.authorization.platform.io, kind: ClusterRole, name: csr-reader}
subjects:
- {kind: Group, name: testers, apiGroup: rbac.authorization.platform.io}
`;

async function csrNames(): Promise<Set<string>> {
  const r = await server.up.ctl(["get", "csr", "-o", "jsonpath={.items[*].metadata.name}"]);
  return new Set(r.stdout.split(" ").filter(Boolean));
}

/** Decides on the next CSR that did not exist in `before` (the plugin's), as an administrator would. */
async function decideNew(before: Set<string>, verb: "approve" | "deny" = "approve"): Promise<string> {
  for (let i = 0; i < 150; i++) {
    const fresh = [...(await csrNames())].find((n) => !before.has(n));
    if (fresh) {
      expect((await server.up.ctl(["certificate", verb, fresh])).code).toBe(0);
      return fresh;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("no new CSR appeared");
}

/** Runs the plugin the way a client does (ExecCredential in the environment), bootstrapping as the administrator. */
function plugin(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return runNode(PLATFORM_CA, ["credential", "--platformconfig", server.up.adminConf, ...args], { env: { HOME: server.up.home, ...env } });
}

const execInfo = (apiVersion: string) => JSON.stringify({ apiVersion, kind: "ExecCredential", spec: { interactive: false } });

const server = useUpServer();
beforeAll(async () => {
  expect((await server.up.ctl(["apply", "-f", "-"], { stdin: RBAC })).code).toBe(0);
});

describe("the ExecCredential apiVersion", () => {
  it.each([
    [{}, "client.authentication.platform.io/v1"],
    [{ PLATFORM_EXEC_INFO: execInfo("client.authentication.platform.io/v1beta1") }, "client.authentication.platform.io/v1beta1"],
    [{ KUBERNETES_EXEC_INFO: execInfo("client.authentication.k8s.io/v1") }, "client.authentication.k8s.io/v1"],
  ])("answers %j in %s", (env, apiVersion) => {
    expect(execApiVersion(env, "platform.io")).toBe(apiVersion);
  });

  it.each([
    ["not JSON", "{", /is not valid JSON/],
    ["another kind", JSON.stringify({ apiVersion: "client.authentication.platform.io/v1", kind: "Config" }), /must be an ExecCredential/],
    ["an unknown version", execInfo("client.authentication.platform.io/v2"), /must be an ExecCredential of apiVersion client.authentication.<suffix>\/v1 or \/v1beta1/],
  ])("refuses %s with exit 1", async (_what, info, message) => {
    const r = await plugin(["--cn", "x", "--cache-dir", tempDir()], { PLATFORM_EXEC_INFO: info });
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toMatch(message);
  });

  it.each([
    [[], /--cn is required/],
    [["--cn", "x", "--expiration-seconds", "10"], /expected `--expiration-seconds` to be whole seconds ≥ 600/],
    [["--cn", "x", "--key-type", "dsa"], /expected `--key-type` to be one of/],
    [["--cn", "x", "--timeout", "later"], /expected `--timeout` to be a duration/],
  ])("refuses %j as a usage error", async (args, message) => {
    const r = await plugin(args);
    expect(r.code).toBe(2);
    expect(oneClearError(r)).toMatch(message);
  });
});

describe("a certificate through a CSR", () => {
  const cacheDir = () => join(server.up.home, "cache-alice");

  it("waits for approval and issuance, then answers with the certificate, key and a renewal time", async () => {
    const before = await csrNames();
    const running = plugin(["--cn", "alice", "--o", "testers", "--cache-dir", cacheDir(), "--expiration-seconds", "3600"], {
      PLATFORM_EXEC_INFO: execInfo("client.authentication.platform.io/v1beta1"),
    });
    const name = await decideNew(before);
    const r = await running;
    expect(r.code).toBe(0);
    // The "issued" line appears only when the plugin saw the approval before the certificate.
    expect(r.stderr).toMatch(new RegExp(`^waiting for CSR ${name} to be approved \\(signer platform.io/apiserver-client\\)\n(waiting for CSR ${name} to be issued \\(signer platform.io/apiserver-client\\)\n)?$`));
    const credential = JSON.parse(r.stdout);
    expect(credential).toMatchObject({ apiVersion: "client.authentication.platform.io/v1beta1", kind: "ExecCredential" });
    const { clientCertificateData, clientKeyData, expirationTimestamp } = credential.status;
    const certFile = tempFile("alice.crt", clientCertificateData);
    expect((await exec("openssl", ["verify", "-CAfile", server.up.caFile, certFile])).stdout).toContain(": OK");
    const text = (await exec("openssl", ["x509", "-noout", "-subject", "-startdate", "-enddate", "-in", certFile])).stdout;
    expect(text).toMatch(/subject=O\s?=\s?testers, CN\s?=\s?alice/);
    const notBefore = Date.parse(/notBefore=(.*)/.exec(text)![1]!);
    const notAfter = Date.parse(/notAfter=(.*)/.exec(text)![1]!);
    expect(Date.parse(expirationTimestamp)).toBeCloseTo(notBefore + 0.8 * (notAfter - notBefore), -4);
    expect(clientKeyData).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    const files = readdirSync(cacheDir());
    const key = files.find((f) => f.endsWith(".key"))!;
    expect(statSync(join(cacheDir(), key)).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(cacheDir(), key), "utf8")).toBe(clientKeyData);
  });

  it("answers from the cache the second time, without a new CSR", async () => {
    const before = await csrNames();
    const r = await plugin(["--cn", "alice", "--o", "testers", "--cache-dir", cacheDir(), "--expiration-seconds", "3600"]);
    expect([r.code, r.stderr]).toEqual([0, ""]);
    expect(JSON.parse(r.stdout).apiVersion).toBe("client.authentication.platform.io/v1");
    expect(await csrNames()).toEqual(before);
  });

  it("renews a cached certificate past 80% of its lifetime", async () => {
    const dir = cacheDir();
    const keyFile = join(dir, readdirSync(dir).find((f) => f.endsWith(".key"))!);
    const certFile = keyFile.replace(/\.key$/, ".crt");
    // A certificate for the cached key, 90% through its life: made with python cryptography, signed by the cluster CA.
    const script = `
import datetime, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID
key = serialization.load_pem_private_key(open(sys.argv[1], "rb").read(), None)
ca_cert = x509.load_pem_x509_certificate(open(sys.argv[2], "rb").read())
ca_key = serialization.load_pem_private_key(open(sys.argv[3], "rb").read(), None)
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")]))
  .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
  .not_valid_before(now - datetime.timedelta(hours=9)).not_valid_after(now + datetime.timedelta(hours=1))
  .sign(ca_key, hashes.SHA256()))
open(sys.argv[4], "wb").write(cert.public_bytes(serialization.Encoding.PEM))
`;
    await exec("python3", ["-c", script, keyFile, server.up.caFile, server.up.caKeyFile, certFile]);
    const aging = readFileSync(certFile, "utf8");
    const before = await csrNames();
    const running = plugin(["--cn", "alice", "--o", "testers", "--cache-dir", dir, "--expiration-seconds", "3600"]);
    const name = await decideNew(before);
    const r = await running;
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(`waiting for CSR ${name} to be approved`);
    const renewed = JSON.parse(r.stdout).status.clientCertificateData;
    expect(renewed).not.toBe(aging);
    expect(readFileSync(certFile, "utf8")).toBe(renewed);
  });

  it("ends with exit 1 and the reason when the CSR is denied", async () => {
    const before = await csrNames();
    const running = plugin(["--cn", "mallory", "--cache-dir", tempDir()]);
    const name = await decideNew(before, "deny");
    const r = await running;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`error: certificate signing request ${name} was denied: PlatformctlDeny: This CSR was denied by platformctl certificate deny.`);
    expect(r.stdout).toBe("");
  });

  it("ends with exit 1 and a clear message when nobody approves in time", async () => {
    const r = await plugin(["--cn", "patient", "--cache-dir", tempDir(), "--timeout", "2s"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^waiting for CSR credential-\w+ to be approved \(signer platform.io\/apiserver-client\)\nerror: timed out after 2s waiting for certificate signing request credential-\w+ to be approved\n$/);
  });

  it("fails clearly when its bootstrap credentials are refused", async () => {
    const r = await runNode(PLATFORM_CA, ["credential", "--cn", "x", "--cache-dir", tempDir(), "-s", server.up.address, "--certificate-authority", server.up.caFile, "--token", "wrong"]);
    expect(r.code).toBe(1);
    expect(oneClearError(r)).toMatch(/Unauthorized/);
  });
});

describe("clients using the plugin with no static credentials", () => {
  /** A client config whose only user is the plugin; `apiVersion` picks the protocol group (kubectl needs k8s.io). */
  function pluginConfig(apiVersion: string, cn: string): string {
    const cacheDir = join(server.up.home, `cache-${cn}`);
    const args = [PLATFORM_CA, "credential", "--cn", cn, "--o", "testers", "--platformconfig", server.up.adminConf, "--cache-dir", cacheDir, "--timeout", "60s"];
    return tempFile(
      `${cn}.conf`,
      `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "${server.up.address}", certificate-authority: "${server.up.caFile}"}
users:
- name: u
  user:
    exec:
      apiVersion: ${apiVersion}
      command: ${process.execPath}
      args: ${JSON.stringify(args)}
      interactiveMode: Never
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`,
    );
  }

  it("lets kubectl get csr once the plugin's CSR is issued, and reuses the cached certificate", async () => {
    const config = pluginConfig("client.authentication.k8s.io/v1", "kube-user");
    const kubectl = (): Promise<Run> =>
      new Promise((resolve) => {
        execFile("kubectl", ["--kubeconfig", config, "--cache-dir", join(server.up.home, "kube-user-cache"), "get", "csr", "-o", "name"], { timeout: 90_000, env: { ...process.env, HOME: server.up.home } }, (err, stdout, stderr) =>
          resolve({ code: err ? 1 : 0, stdout, stderr }),
        );
      });
    const before = await csrNames();
    const first = kubectl();
    const name = await decideNew(before);
    const r = await first;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`certificatesigningrequest.certificates.platform.io/${name}\n`);
    const after = await csrNames();
    const again = await kubectl();
    expect(again.code).toBe(0);
    expect(await csrNames()).toEqual(after);
    // The CSR itself was made with the bootstrap (administrator) credentials.
    expect((await server.up.ctl(["get", "csr", name, "-o", "jsonpath={.spec.username}"])).stdout).toBe("platform-ca:admin");
  });

  it("lets platformctl use it too, and the server sees the certificate's identity", async () => {
    const config = pluginConfig("client.authentication.platform.io/v1", "ctl-user");
    const before = await csrNames();
    const first = runNode(CTL, ["--platformconfig", config, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"], { env: { HOME: server.up.home } });
    await decideNew(before);
    const r = await first;
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('ctl-user ["testers","system:authenticated"]');
    const listed = await runNode(CTL, ["--platformconfig", config, "get", "csr", "-o", "name"], { env: { HOME: server.up.home } });
    expect(listed.code).toBe(0);
    const forbidden = await runNode(CTL, ["--platformconfig", config, "get", "sa"], { env: { HOME: server.up.home } });
    expect(forbidden.code).toBe(1);
    expect(oneClearError(forbidden)).toMatch(/User "ctl-user" cannot list resource "serviceaccounts"/);
  });

  it("refuses bootstrap credentials that run the plugin again", async () => {
    const config = pluginConfig("client.authentication.platform.io/v1", "loop");
    const r = await runNode(PLATFORM_CA, ["credential", "--cn", "loop", "--platformconfig", config, "--cache-dir", tempDir(), "--timeout", "5s"], { env: { HOME: server.up.home } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/bootstrap credentials of platform-ca credential run platform-ca credential again/);
  });
});
