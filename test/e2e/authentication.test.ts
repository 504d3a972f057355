// `platform-ca up --authentication-config` as a real process: kubectl with an OIDC issuer's token, RBAC by mapped group, readiness, reload.
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, stringify } from "yaml";
import { startTestOidcIssuer, type TestOidcIssuer } from "../../src/testing/oidc-issuer.js";
import { tempDir } from "../fixtures/temp-dir.js";
import { ensureBuilt, kubectlFails, kubectlWith, type Kubectl } from "./apiserver-process.js";
import { kubeconfigFor, startUp, type UpProcess } from "./up-process.js";

function authConfig(issuer: TestOidcIssuer, usernamePrefix: string): string {
  return stringify({
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "AuthenticationConfiguration",
    jwt: [
      {
        issuer: { url: issuer.url, certificateAuthority: issuer.caPem, audiences: ["platform"] },
        claimMappings: {
          username: { claim: "sub", prefix: usernamePrefix },
          groups: { claim: "groups", prefix: "oidc:" },
          extra: [{ key: "example.org/team", valueExpression: "claims.?team.orValue('')" }],
        },
        userValidationRules: [{ expression: "!user.username.startsWith('system:')", message: "system: names are reserved" }],
      },
    ],
  });
}

/** GET with admin.conf's client certificate: the status and the body (kubectl hides a 503's body). */
function getAsAdmin(up: UpProcess, path: string): Promise<{ status: number; body: string }> {
  const doc = parseYaml(readFileSync(up.adminConfig, "utf8"));
  const b64 = (s: string) => Buffer.from(s, "base64");
  const user = doc.users[0].user;
  return new Promise((resolve, reject) => {
    request(`${up.address}${path}`, { ca: b64(doc.clusters[0].cluster["certificate-authority-data"]), cert: b64(user["client-certificate-data"]), key: b64(user["client-key-data"]) }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on("error", reject)
      .end();
  });
}

async function eventually<T>(fn: () => T, what: string, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return fn();
    } catch (err) {
      if (Date.now() > until) throw new Error(`${what}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

describe("platform-ca up --authentication-config with a real HTTPS OIDC issuer", () => {
  let issuer: TestOidcIssuer;
  let up: UpProcess;
  let admin: Kubectl;
  let configPath: string;
  const oidcUser = async (claims: Record<string, unknown>) => kubectlWith(kubeconfigFor(up, `oidc-${Math.random().toString(36).slice(2)}`, { token: await issuer.mint(claims) }));

  beforeAll(async () => {
    ensureBuilt();
    issuer = await startTestOidcIssuer();
    // Discovery fails at first: the server starts, but is not ready until the issuer's keys are fetched.
    issuer.setDiscovery({ status: 503 });
    const dir = tempDir("platform-ca-authn-");
    configPath = join(dir, "authentication.yaml");
    writeFileSync(configPath, authConfig(issuer, "oidc:"));
    up = await startUp({ dataDir: join(dir, "data"), args: ["--group-suffix", "k8s.io", "--authentication-config", configPath] });
    admin = kubectlWith(up.adminConfig);
  }, 240_000);
  afterAll(async () => {
    expect(await up?.stop()).toBe(0);
    await issuer?.close();
  });

  it("is not ready while the issuer's keys cannot be fetched, and says which issuer; ready once they are", async () => {
    const failed = await getAsAdmin(up, "/readyz/authentication-jwt-issuers");
    expect(failed.status).toBe(503);
    expect(failed.body).toContain(`issuer ${issuer.url}`);
    const verbose = await getAsAdmin(up, "/readyz?verbose");
    expect(verbose.status).toBe(503);
    expect(verbose.body).toMatch(/\[-\]authentication-jwt-issuers failed/);
    issuer.setDiscovery(undefined);
    await eventually(() => admin(["get", "--raw", "/readyz"]), "readyz", 60_000);
    expect(admin(["get", "--raw", "/readyz?verbose"])).toContain("[+]authentication-jwt-issuers ok");
  }, 90_000);

  it("kubectl --token with an issuer token: auth whoami shows the mapped user, groups and extra", async () => {
    const alice = await oidcUser({ sub: "alice", groups: ["dev", "ops"], team: "pki" });
    const review = JSON.parse(alice(["auth", "whoami", "-o", "json"]));
    expect(review.status.userInfo).toEqual({ username: "oidc:alice", groups: ["oidc:dev", "oidc:ops", "system:authenticated"], extra: { "example.org/team": ["pki"] } });
  });

  it("a TokenReview of an issuer token answers its mapped user for the API server's audiences", async () => {
    const review = (token: string, audiences?: string[]) =>
      JSON.parse(admin(["create", "-f", "-", "-o", "json"], JSON.stringify({ apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token, ...(audiences && { audiences }) } }))).status;
    const token = await issuer.mint({ sub: "dave", groups: ["ops"] });
    expect(review(token)).toMatchObject({ authenticated: true, user: { username: "oidc:dave", groups: ["oidc:ops", "system:authenticated"] } });
    expect(review(token, ["some-other-service"])).toMatchObject({ authenticated: false, error: expect.stringMatching(/requested audiences/) });
    expect(review(await issuer.mint({ sub: "dave", exp: Math.floor(Date.now() / 1000) - 10 }))).toMatchObject({ authenticated: false, error: expect.stringMatching(/oidc: token is expired/) });
  });

  it("refuses expired tokens, other audiences and user validation failures", async () => {
    for (const claims of [{ sub: "a", exp: Math.floor(Date.now() / 1000) - 10 }, { sub: "a", aud: "elsewhere" }]) {
      expect(kubectlFails(await oidcUser(claims), ["auth", "whoami"])).toMatch(/Unauthorized|provide credentials/);
    }
  });

  it("maps an issuer group to RBAC: the group's RoleBinding lets its members read CSRs", async () => {
    const bob = await oidcUser({ sub: "bob", groups: ["pki-readers"] });
    expect(kubectlFails(bob, ["get", "csr"])).toMatch(/forbidden/i);
    admin(["create", "clusterrole", "csr-reader", "--verb=get,list,watch", "--resource=certificatesigningrequests"]);
    admin(["create", "clusterrolebinding", "pki-readers-read-csrs", "--clusterrole=csr-reader", "--group=oidc:pki-readers"]);
    await eventually(() => bob(["get", "csr"]), "bob reads CSRs after the binding");
    expect(bob(["auth", "can-i", "list", "csr"])).toBe("yes\n");
  });

  it("reloads the file on change: good → bad (kept, logged) → good", async () => {
    const carol = await oidcUser({ sub: "carol" });
    const whoami = () => JSON.parse(carol(["auth", "whoami", "-o", "json"])).status.userInfo.username as string;
    expect(whoami()).toBe("oidc:carol");
    writeFileSync(configPath, authConfig(issuer, "oidc:").replace("audiences:", "audiencez:"));
    await eventually(() => expect(up.stderr() + up.stdout()).toContain("kept the running authentication configuration"), "bad file logged");
    expect(whoami()).toBe("oidc:carol");
    writeFileSync(configPath, authConfig(issuer, "corp:"));
    await eventually(() => expect(whoami()).toBe("corp:carol"), "new prefix in use", 30_000);
  }, 60_000);
});
