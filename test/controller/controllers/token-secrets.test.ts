// The token controller on fake stores: a token Secret filled (a token the server accepts, ca.crt, namespace, the
// account's uid), an existing token kept, nothing written when complete, and Secrets whose account is gone deleted.
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { groupNames } from "../../../src/api/group.js";
import type { ApiObject } from "../../../src/api/meta.js";
import type { Secret } from "../../../src/api/types/core.js";
import { readSigningKey, SA_KEY_FILE, type SigningKey } from "../../../src/apiserver/auth/sa-signing-key.js";
import { ServiceAccountTokens, type TokenLookups } from "../../../src/apiserver/auth/service-account-tokens.js";
import { TokenController } from "../../../src/controller/controllers/token-secrets.js";
import { Informer } from "../../../src/controller/informer.js";
import { FakeStore } from "../fake-store.js";
import { tempDir } from "../../fixtures/temp-dir.js";
import { until } from "../../fixtures/wait.js";

const names = groupNames();
const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const TOKEN_TYPE = "platform.io/service-account-token";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const unb64 = (s: string | undefined) => Buffer.from(s ?? "", "base64").toString();

let tokens: ServiceAccountTokens;
let key: SigningKey;
beforeAll(async () => {
  const dir = tempDir();
  tokens = new ServiceAccountTokens({ dataDir: dir, issuer: "https://platform-ca.test", names, clock: { now: () => Date.now() } });
  await tokens.start();
  key = await readSigningKey(join(dir, SA_KEY_FILE));
});

const running: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.stop();
});

/** `live`: the store the controller's GET reads, when it is not the one its informer watches (a cache behind). */
function setup(o: { live?: FakeStore<ApiObject> } = {}) {
  const secrets = new FakeStore<Secret>({ kind: "Secret" });
  const accounts = new FakeStore<ApiObject>({ kind: "ServiceAccount" });
  const tokenSecrets = new Informer<Secret>({ listWatcher: secrets.client(), name: "secrets", random: () => 0 });
  const accountInformer = new Informer<ApiObject>({ listWatcher: accounts.client(), name: "serviceaccounts", random: () => 0 });
  const writer = secrets.client();
  const controller = new TokenController({ secrets: writer, serviceAccounts: (o.live ?? accounts).client(), tokenSecrets, accounts: accountInformer, names, key, rootCa: CA, stopTimeoutMs: 1000 });
  const signal = new AbortController();
  const start = async () => {
    tokenSecrets.start(signal.signal);
    accountInformer.start(signal.signal);
    await controller.start(signal.signal);
    running.push({ stop: async () => (await controller.stop(), await tokenSecrets.stop(), await accountInformer.stop(), signal.abort()) });
  };
  const tokenSecret = (name: string, account: string, fields: Partial<Secret> = {}) =>
    secrets.put(secrets.make(name, { namespace: "ci", type: TOKEN_TYPE, ...fields, metadata: { name, namespace: "ci", annotations: { "platform.io/service-account.name": account }, ...fields.metadata } }));
  /** What the API server's lookups would answer from these stores. */
  const lookups: TokenLookups = {
    serviceAccount: (ns, n) => accounts.objects.get(`${ns}/${n}`) && { uid: accounts.objects.get(`${ns}/${n}`)!.metadata.uid! },
    secret: (ns, n) => {
      const s = secrets.objects.get(`${ns}/${n}`);
      return s && { uid: s.metadata.uid!, data: { token: unb64(s.data?.token) } };
    },
  };
  return { secrets, accounts, writer, start, tokenSecret, lookups };
}

describe("TokenController", () => {
  it("fills a token Secret with a token the server accepts, the root CA, the namespace and the account's uid", async () => {
    const { secrets, accounts, start, tokenSecret, lookups } = setup();
    const sa = accounts.put(accounts.make("robot", { namespace: "ci" }));
    tokenSecret("robot-token", "robot");
    await start();
    const filled = await until(() => (secrets.objects.get("ci/robot-token")?.data?.token ? secrets.objects.get("ci/robot-token") : undefined), "the token");
    expect(unb64(filled.data!["ca.crt"])).toBe(CA);
    expect(unb64(filled.data!.namespace)).toBe("ci");
    expect(filled.metadata.annotations).toEqual({ "platform.io/service-account.name": "robot", "platform.io/service-account.uid": sa.metadata.uid });
    expect(await tokens.review(unb64(filled.data!.token), { lookups })).toMatchObject({ authenticated: true, user: { username: "system:serviceaccount:ci:robot", uid: sa.metadata.uid } });
  });

  it("keeps a token the Secret has, writes only what is missing, and nothing once complete", async () => {
    const { secrets, accounts, writer, start, tokenSecret } = setup();
    accounts.put(accounts.make("robot", { namespace: "ci" }));
    tokenSecret("robot-token", "robot", { data: { token: b64("kept") } });
    tokenSecret("plain", "robot", { type: "Opaque" });
    await start();
    const filled = await until(() => (secrets.objects.get("ci/robot-token")?.data?.namespace ? secrets.objects.get("ci/robot-token") : undefined), "the namespace written");
    expect(unb64(filled.data!.token)).toBe("kept");
    expect(writer.count("update")).toBe(1);
    // Its own update comes back through the informer: nothing more to write. The Opaque Secret is not touched.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(writer.count("update")).toBe(1);
    expect(secrets.objects.get("ci/plain")?.data).toBeUndefined();
  });

  it("reads an account its cache has not seen from the server rather than deleting the Secret", async () => {
    const live = new FakeStore<ApiObject>({ kind: "ServiceAccount" });
    live.put(live.make("robot", { namespace: "ci" }));
    const { secrets, start, tokenSecret } = setup({ live });
    tokenSecret("robot-token", "robot");
    await start();
    await until(() => secrets.objects.get("ci/robot-token")?.data?.token, "the token from the account read live");
  });

  it("reads the server when its cache holds an account with another uid than the Secret's, and keeps the Secret if the server's matches", async () => {
    const live = new FakeStore<ApiObject>({ kind: "ServiceAccount" });
    const current = live.put(live.make("robot", { namespace: "ci" }));
    const { secrets, accounts, start, tokenSecret } = setup({ live });
    // The cache still holds the account this one replaced.
    accounts.put(accounts.make("robot", { namespace: "ci", metadata: { name: "robot", uid: "replaced-uid" } }));
    tokenSecret("robot-token", "robot", { metadata: { name: "robot-token", annotations: { "platform.io/service-account.name": "robot", "platform.io/service-account.uid": current.metadata.uid! } } });
    await start();
    const filled = await until(() => (secrets.objects.get("ci/robot-token")?.data?.token ? secrets.objects.get("ci/robot-token") : undefined), "the token from the live account");
    expect(filled.metadata.annotations?.["platform.io/service-account.uid"]).toBe(current.metadata.uid);
  });

  it("deletes a Secret whose account does not exist, has another uid, or is deleted later", async () => {
    const { secrets, accounts, start, tokenSecret } = setup();
    accounts.put(accounts.make("robot", { namespace: "ci" }));
    tokenSecret("orphan", "nobody");
    tokenSecret("stale", "robot", { metadata: { name: "stale", annotations: { "platform.io/service-account.name": "robot", "platform.io/service-account.uid": "an-older-uid" } } });
    tokenSecret("robot-token", "robot");
    await start();
    await until(() => !secrets.objects.has("ci/orphan") && !secrets.objects.has("ci/stale"), "the orphan and stale Secrets deleted");
    await until(() => secrets.objects.get("ci/robot-token")?.data?.token, "the good one filled");
    accounts.remove("ci/robot");
    await until(() => !secrets.objects.has("ci/robot-token"), "the Secret deleted with its account");
  });
});
