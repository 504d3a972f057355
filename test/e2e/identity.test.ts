// `platform-ca up` as a real process, driven by kubectl with the admin.conf it wrote: TLS, identity, RBAC, impersonation.
import { execFileSync } from "node:child_process";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { groupNames } from "../../src/api/group.js";
import { csr, csrObject } from "../fixtures/csr.js";
import { ensureBuilt, kubectlFails, type Kubectl, kubectlWith } from "./apiserver-process.js";
import { kubeconfigFor, startUp, type UpProcess } from "./up-process.js";
import { tempDir } from "../fixtures/temp-dir.js";

const csrManifest = (suffix: string, name: string, pem: string): string =>
  toYaml(csrObject({ names: groupNames(suffix), name, request: pem, signerName: `${suffix}/apiserver-client` }));

/** kubectl until it succeeds: RBAC changes reach the authorizer through a watch, a moment after the write. */
async function eventually(kubectl: Kubectl, args: readonly string[]): Promise<string> {
  for (let i = 0; ; i++) {
    try {
      return kubectl(args);
    } catch (err) {
      if (i >= 20) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe("platform-ca up, then kubectl with admin.conf", () => {
  let up: UpProcess;
  let kubectl: Kubectl;

  beforeAll(async () => {
    ensureBuilt();
    up = await startUp();
    kubectl = kubectlWith(up.adminConfig);
  }, 240_000);
  afterAll(async () => {
    expect(await up?.stop()).toBe(0);
  });

  it("listens on the real port and writes admin.conf (0600) pointing at it", () => {
    expect(up.address).toMatch(/^https:\/\/127\.0\.0\.1:(?!0$)\d+$/);
    expect(up.stdout()).toContain(`kubectl --kubeconfig ${up.adminConfig} get csr`);
    expect(up.stdout()).toContain(`npx platformctl --platformconfig ${up.adminConfig} get csr`);
    const doc = parseYaml(readFileSync(up.adminConfig, "utf8"));
    expect(doc.clusters[0].cluster.server).toBe(up.address);
    expect((statSync(up.adminConfig).mode & 0o777).toString(8)).toBe("600");
    expect(up.stderr()).not.toMatch(/PRIVATE KEY/);
  });

  it("gets, creates from a file, and shows the administrator as the requester", async () => {
    expect(kubectl(["get", "csr"])).toBe("");
    expect(kubectl(["create", "-f", "-"], csrManifest("platform.io", "from-admin", (await csr({ cn: "svc" })).pem))).toContain("certificatesigningrequest.certificates.platform.io/from-admin created");
    expect(kubectl(["get", "csr"])).toMatch(/^from-admin\s+\d+s\s+platform\.io\/apiserver-client\s+platform-ca:admin\s+<none>\s+Pending$/m);
  });

  it("answers a SelfSubjectReview with platform-ca:admin in system:masters", () => {
    const ssr = "apiVersion: authentication.platform.io/v1\nkind: SelfSubjectReview\nmetadata: {}\n";
    const review = JSON.parse(kubectl(["create", "-f", "-", "-o", "json"], ssr));
    expect(review.status.userInfo).toEqual({ username: "platform-ca:admin", groups: ["system:masters", "system:authenticated"] });
  });

  it("refuses kubectl with an unknown token, and curl without credentials (401)", () => {
    const stranger = kubectlWith(kubeconfigFor(up, "stranger", { token: "not-a-token" }));
    expect(kubectlFails(stranger, ["get", "csr"])).toMatch(/You must be logged in to the server \(Unauthorized\)|the server has asked for the client to provide credentials/);
    const ca = join(up.dataDir, "pki", "ca.crt");
    const status = JSON.parse(execFileSync("curl", ["-s", "--cacert", ca, `${up.address}/api/v1/namespaces`], { encoding: "utf8", timeout: 30_000 }));
    expect(status).toMatchObject({ kind: "Status", code: 401, message: expect.stringMatching(/no credentials were presented/) });
  });
});

describe("platform-ca up --group-suffix k8s.io: kubectl's own commands unmodified", () => {
  let up: UpProcess;
  let admin: Kubectl;
  let bob: Kubectl;

  beforeAll(async () => {
    ensureBuilt();
    const dir = tempDir("platform-ca-identity-");
    const tokens = join(dir, "tokens.csv");
    writeFileSync(tokens, "bob-token,bob,uid-bob\n", { mode: 0o600 });
    up = await startUp({ dataDir: join(dir, "data"), args: ["--group-suffix", "k8s.io", "--token-file", tokens] });
    admin = kubectlWith(up.adminConfig);
    bob = kubectlWith(kubeconfigFor(up, "bob", { token: "bob-token" }));
  }, 240_000);
  afterAll(async () => {
    expect(await up?.stop()).toBe(0);
  });

  it("kubectl auth whoami names the administrator", () => {
    const out = admin(["auth", "whoami"]);
    expect(out).toMatch(/^Username\s+platform-ca:admin$/m);
    expect(out).toMatch(/^Groups\s+\[system:masters system:authenticated\]$/m);
  });

  it("kubectl auth can-i (SelfSubjectAccessReview, a protobuf body): yes for the administrator, no with exit 1 for bob", () => {
    expect(admin(["api-resources", "--api-group", "authorization.k8s.io", "-o", "name"])).toContain("selfsubjectaccessreviews.authorization.k8s.io\n");
    expect(admin(["auth", "can-i", "delete", "csr", "--all-namespaces"])).toBe("yes\n");
    expect(bob(["auth", "can-i", "get", "/healthz"])).toBe("yes\n");
    const refused = (args: readonly string[]) => {
      try {
        bob(args);
      } catch (err) {
        const e = err as { status: number; stdout: string };
        return [e.status, e.stdout];
      }
      throw new Error(`kubectl ${args.join(" ")} said yes`);
    };
    expect(refused(["auth", "can-i", "get", "csr", "-A"])).toEqual([1, "no\n"]);
    expect(refused(["auth", "can-i", "get", "/metrics", "-q"])).toEqual([1, ""]);
  });

  it("creates a namespace, ServiceAccount and Secret with kubectl create (protobuf bodies)", () => {
    expect(admin(["create", "namespace", "team1"])).toContain("namespace/team1 created");
    expect(admin(["-n", "team1", "create", "serviceaccount", "robot"])).toContain("serviceaccount/robot created");
    expect(admin(["-n", "team1", "create", "secret", "generic", "s1", "--from-literal=a=b"])).toContain("secret/s1 created");
    expect(admin(["-n", "team1", "get", "secret", "s1", "-o", "jsonpath={.data.a}"])).toBe(Buffer.from("b").toString("base64"));
  });

  it("kubectl create token --audience issues a token that passes a TokenReview for that audience only", () => {
    const token = admin(["-n", "team1", "create", "token", "robot", "--audience", "x"]).trim();
    const review = (audience: string) =>
      JSON.parse(admin(["create", "-f", "-", "-o", "json"], JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, audiences: [audience] } }))).status;
    expect(review("x")).toMatchObject({ authenticated: true, audiences: ["x"], user: { username: "system:serviceaccount:team1:robot" } });
    expect(review("y")).toMatchObject({ authenticated: false });
  });

  it("approves a CSR with kubectl certificate approve as the administrator", async () => {
    admin(["create", "-f", "-"], csrManifest("k8s.io", "to-approve", (await csr({ cn: "to-approve" })).pem));
    expect(admin(["certificate", "approve", "to-approve"])).toContain("certificatesigningrequest.certificates.k8s.io/to-approve approved");
  });

  it("refuses --as a ServiceAccount for a user without impersonate (403), and allows it once granted", async () => {
    // Discovery is cached from bob's own identity first, so the refusal comes from the request itself.
    bob(["api-resources"]);
    const asRobot = ["--as=system:serviceaccount:team1:robot", "get", "csr"];
    expect(kubectlFails(bob, asRobot)).toContain(
      'Error from server (Forbidden): serviceaccounts "robot" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "team1"',
    );
    admin(["create", "clusterrole", "sa-impersonator", "--verb=impersonate", "--resource=serviceaccounts"]);
    admin(["create", "clusterrolebinding", "bob-impersonates", "--clusterrole=sa-impersonator", "--user=bob"]);
    admin(["create", "clusterrole", "csr-reader", "--verb=list", "--resource=certificatesigningrequests"]);
    admin(["create", "clusterrolebinding", "robot-reads-csrs", "--clusterrole=csr-reader", "--serviceaccount=team1:robot"]);
    expect(await eventually(bob, [...asRobot, "-o", "name"])).toContain("certificatesigningrequest.certificates.k8s.io/to-approve");
    expect(kubectlFails(bob, ["get", "csr"])).toContain('User "bob" cannot list resource "certificatesigningrequests"');
  });
});
