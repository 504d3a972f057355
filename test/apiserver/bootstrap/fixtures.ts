// Builders for secure-server tests: an in-process HTTPS server on a temp data directory, an HTTPS client, RBAC grants.
import { readFileSync, writeFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { groupNames, type GroupNames } from "../../../src/api/group.js";
import type { ApiObject } from "../../../src/api/meta.js";
import type { AdmissionSettings } from "../../../src/apiserver/bootstrap/auth.js";
import { createSecureServer, type SecureServer, type SecureServerState } from "../../../src/apiserver/bootstrap/secure-server.js";
import type { AuthorizationAttributes } from "../../../src/apiserver/auth/authorizer.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { caFromPem } from "../../../src/pki/ca.js";
import { Issuer } from "../../../src/pki/issue.js";
import type { PolicyRule } from "../../../src/api/types/rbac.js";
import { clusterRole, clusterRoleBinding, issueCert, T0, userSubject, type CertOptions } from "../auth/fixtures.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { tempDir } from "../../fixtures/temp-dir.js";

export { T0 };

/** Token-file users: an administrator (system:masters) and two users with no permissions of their own. */
export const TOKENS = { admin: "admin-token", alice: "alice-token", bob: "bob-token" } as const;
const TOKEN_FILE = `${TOKENS.admin},admin,uid-admin,"system:masters"\n${TOKENS.alice},alice,uid-alice\n${TOKENS.bob},bob,uid-bob,"devs"\n`;

export interface Reply {
  readonly status: number;
  readonly body: any;
  readonly text: string;
  readonly headers?: IncomingHttpHeaders;
}

export interface CallOptions {
  readonly token?: string;
  /** A client certificate to present in the TLS handshake. */
  readonly cert?: { readonly pem: string; readonly keyPem: string };
  readonly body?: unknown;
  readonly contentType?: string;
  readonly headers?: Record<string, string | string[]>;
}

export interface SecureFixture {
  readonly names: GroupNames;
  readonly clock: FakeClock;
  readonly dataDir: string;
  readonly secure: SecureServer;
  readonly state: SecureServerState;
  call(method: string, path: string, o?: CallOptions): Promise<Reply>;
  /** A client certificate issued by the data directory's cluster CA (validity relative to T0, in seconds). */
  clientCert(o: CertOptions): Promise<{ pem: string; keyPem: string }>;
  /** Grants `rules` to a user with a ClusterRole + ClusterRoleBinding, and waits until the authorizer sees it. */
  grant(user: string, name: string, rules: PolicyRule[]): Promise<void>;
}

export interface FixtureOptions {
  readonly suffix?: string;
  /** PEM of extra CA certificates for --client-ca-file. */
  readonly clientCa?: () => Promise<string>;
  readonly anonymous?: boolean;
  /** Poll period of pki/ca.crt; default 0 (off). */
  readonly caPollMs?: number;
  readonly admission?: AdmissionSettings;
}

/**
 * One secure server per test file (call at the top level): memory storage, a fake clock at T0 + 1 minute, the token
 * file above. The returned function gives the fixture once beforeAll has run.
 */
export function useSecureFixture(o: FixtureOptions = {}): () => SecureFixture {
  const dataDir = tempDir();
  let fixture: SecureFixture | undefined;
  beforeAll(async () => {
    fixture = await startFixture(dataDir, o);
  });
  afterAll(() => fixture?.secure.stop());
  return () => {
    if (!fixture) throw new Error("the secure server fixture has not started");
    return fixture;
  };
}

async function startFixture(dataDir: string, o: FixtureOptions): Promise<SecureFixture> {
  const names = groupNames(o.suffix);
  const clock = new FakeClock(T0 + 60_000);
  const tokenFile = join(dataDir, "tokens.csv");
  writeFileSync(tokenFile, TOKEN_FILE);
  let clientCaFile: string | undefined;
  if (o.clientCa) writeFileSync((clientCaFile = join(dataDir, "client-ca.pem")), await o.clientCa());
  const secure = createSecureServer({
    dataDir,
    storage: new MemoryStorage({ clock }),
    listen: { host: "127.0.0.1", port: 0 },
    groupSuffix: names.suffix,
    clock,
    tokenFile,
    caPollMs: o.caPollMs ?? 0,
    anonymous: o.anonymous === true,
    ...(clientCaFile && { clientCaFile }),
    ...(o.admission && { admission: o.admission }),
  });
  const state = await secure.start();
  const address = state.server.address;
  const call = (method: string, path: string, c: CallOptions = {}) => httpsCall(address, method, path, c);
  const ca = caFromPem(readFileSync(state.pki.caFiles.certFile, "utf8"), readFileSync(state.pki.caFiles.keyFile, "utf8"));
  const issuer = { certPem: ca.certPem, issuer: new Issuer(ca) };
  return {
    names,
    clock,
    dataDir,
    secure,
    state,
    call,
    clientCert: (c) => issueCert({ issuer, ...c }),
    async grant(user, name, rules) {
      const admin = { token: TOKENS.admin };
      expect201(await call("POST", `/apis/${names.rbac}/v1/clusterroles`, { ...admin, body: clusterRole(name, rules) }));
      expect201(await call("POST", `/apis/${names.rbac}/v1/clusterrolebindings`, { ...admin, body: clusterRoleBinding(name, name, [userSubject(user)]) }));
      const first = rules[0]!;
      const [resource, subresource] = (first.resources?.[0] ?? "").split("/");
      const probe: AuthorizationAttributes = {
        user: { username: user, groups: ["system:authenticated"] },
        verb: first.verbs[0]!,
        resourceRequest: first.nonResourceURLs === undefined,
        group: first.apiGroups?.[0] ?? "",
        resource,
        ...(subresource && { subresource }),
        ...(first.resourceNames?.[0] && { name: first.resourceNames[0] }),
        ...(first.nonResourceURLs?.[0] && { path: first.nonResourceURLs[0] }),
      };
      // The RBAC cache follows storage through a watch; the grant is in force once a decision sees it.
      for (let i = 0; i < 500 && !(await secure.auth.authorizer.authorize(probe)).allowed; i++) await new Promise((r) => setImmediate(r));
    },
  };
}

function expect201(r: Reply): void {
  if (r.status !== 201) throw new Error(`expected 201, got ${r.status}: ${r.text}`);
}

/** The SelfSubjectReview request, which every authenticated user may make. */
export function selfSubjectReview(f: Pick<SecureFixture, "names">): { readonly path: string; readonly body: ApiObject } {
  return { path: `/apis/${f.names.authentication}/v1/selfsubjectreviews`, body: { apiVersion: `${f.names.authentication}/v1`, kind: "SelfSubjectReview", metadata: {} } };
}

/** Asks the server who the caller is. */
export function whoAmI(f: SecureFixture, o: CallOptions): Promise<Reply> {
  const { path, body } = selfSubjectReview(f);
  return f.call("POST", path, { ...o, body });
}

/** One HTTPS request; the server certificate is not checked here (the PKI tests verify it with openssl). */
export function httpsCall(address: string, method: string, path: string, o: CallOptions = {}): Promise<Reply> {
  const url = new URL(address + path);
  const payload = o.body === undefined ? undefined : Buffer.isBuffer(o.body) ? o.body : JSON.stringify(o.body);
  const headers: Record<string, string | string[]> = {
    ...(o.headers ?? {}),
    ...(payload !== undefined && { "content-type": o.contentType ?? "application/json" }),
    ...(o.token !== undefined && { authorization: `Bearer ${o.token}` }),
  };
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers, rejectUnauthorized: false, agent: false, ...(o.cert && { cert: o.cert.pem, key: o.cert.keyPem }) },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, body, text, headers: res.headers });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}
