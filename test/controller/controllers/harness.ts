// A real API server in-process (memory storage, token authentication, RBAC, admission, SubjectAccessReview) and clients over loopback.
import { afterEach } from "vitest";
import { groupNames, type GroupNames } from "../../../src/api/group.js";
import type { ApiObject } from "../../../src/api/meta.js";
import type { CertificateSigningRequest } from "../../../src/api/types/csr.js";
import type { Event } from "../../../src/api/types/event.js";
import { AdmissionChain } from "../../../src/apiserver/auth/admission.js";
import { defaultAdmissionPlugins } from "../../../src/apiserver/auth/admission-plugins.js";
import { createAuthPipeline } from "../../../src/apiserver/auth/auth-pipeline.js";
import { AuthenticatorChain } from "../../../src/apiserver/auth/authn-chain.js";
import { TokenFileAuthenticator } from "../../../src/apiserver/auth/authn-token-file.js";
import { privilegedGroupsAuthorizer } from "../../../src/apiserver/auth/authorizer.js";
import { bootstrapPolicy, CONTROLLER_USER } from "../../../src/apiserver/auth/bootstrap-policy.js";
import { RbacAuthorizer } from "../../../src/apiserver/auth/rbac.js";
import { createSubjectAccessReviewHandler } from "../../../src/apiserver/auth/subject-access-review.js";
import { createApiServer, type ApiServer } from "../../../src/apiserver/server.js";
import { MemoryStorage } from "../../../src/apiserver/storage/memory.js";
import { createClient, type RestClient } from "../../../src/client/rest-client.js";
import { systemClock, type Clock } from "../../../src/time/clock.js";
import { FakeClock } from "../../../src/time/fake-clock.js";
import { EventRecorder } from "../../../src/controller/event-recorder.js";
import { Informer, stripManagedFields } from "../../../src/controller/informer.js";
import { controllerResources, type ControllerResources } from "../../../src/controller/controllers/controller-set.js";
import { silentLogger } from "../../../src/logger.js";
import { StaticLister } from "../../apiserver/auth/fixtures.js";
import { newCsrObject, type CsrObjectOptions, type CsrOptions } from "../../fixtures/csr.js";

/** The identities of the tests: the administrator and the controller by bearer token, the others by impersonation. */
export const USERS = {
  admin: { username: "admin", groups: ["system:masters"] },
  controller: { username: CONTROLLER_USER, groups: [] as string[] },
  node1: { username: "system:node:node-1", groups: ["system:nodes"] },
  bootstrapper: { username: "system:bootstrap:abcdef", groups: ["system:bootstrappers"] },
  mallory: { username: "mallory", groups: [] as string[] },
} as const;
export type UserName = keyof typeof USERS;

export interface Harness {
  readonly names: GroupNames;
  /** Drives the controllers, and is the server's wall time (creation and condition timestamps). */
  readonly clock: FakeClock;
  readonly server: ApiServer;
  client(user: UserName): RestClient;
  /** Resources as the controller identity sees them. */
  readonly api: ControllerResources;
  /** The same resources as an administrator. */
  readonly admin: ControllerResources;
  readonly csrInformer: Informer<CertificateSigningRequest>;
  readonly events: EventRecorder;
  /** Starts the informers with the controller identity and waits for their first list. */
  startInformers(): Promise<void>;
  stop(): Promise<void>;
}

export async function startHarness(options: { suffix?: string } = {}): Promise<Harness> {
  const names = groupNames(options.suffix);
  const clock = new FakeClock(Date.UTC(2030, 0, 1));
  // Server-side time follows the fake clock; its own timers (bookmarks, watch deadlines) stay real.
  const serverClock: Clock = { ...systemClock, now: () => clock.now() };
  const policy = bootstrapPolicy(names);
  const rbac = privilegedGroupsAuthorizer(new RbacAuthorizer({ names, lister: StaticLister.of([...policy.clusterRoles, ...policy.clusterRoleBindings, ...requesterGrant(names)]) }));
  const tokens = new TokenFileAuthenticator(
    (["admin", "controller"] as const).map((token, i) => ({ secret: `${token}-token`, user: { ...USERS[token], groups: [...USERS[token].groups] }, line: i + 1 })),
  );
  const pipeline = createAuthPipeline({
    authenticator: new AuthenticatorChain({ tokenFile: tokens }),
    authorizer: rbac,
    admission: new AdmissionChain({ names, authorizer: rbac, ...defaultAdmissionPlugins() }),
    names,
  });
  const server = createApiServer({ storage: new MemoryStorage({ clock: serverClock }), pipeline, insecure: true, clock: serverClock, groupSuffix: names.suffix });
  server.registerCreateHandler(names.authorization, "subjectaccessreviews", createSubjectAccessReviewHandler(rbac));
  await server.start();
  const clients: RestClient[] = [];
  // Users other than the two with tokens are the administrator impersonating them, as a node agent would appear.
  const client = (user: UserName): RestClient => {
    const token = user === "controller" ? "controller-token" : "admin-token";
    const impersonate = user === "controller" || user === "admin" ? undefined : { user: USERS[user].username, groups: [...USERS[user].groups] };
    const c = createClient(
      { server: server.address, tls: {}, credentials: { type: "token", token }, namespace: "default", qps: 0, burst: 1, userAgent: "controller-test/1", impersonate },
      { groupSuffix: names.suffix, retry: { maxAttempts: 1 } },
    );
    clients.push(c);
    return c;
  };
  const api = controllerResources(client("controller"), names);
  // As the controller manager builds its informers: managedFields stripped from what the controllers see and send back.
  const csrInformer = new Informer<CertificateSigningRequest>({ listWatcher: api.csrs, name: "csrs", clock, random: () => 0, transform: stripManagedFields });
  const events = new EventRecorder({ client: api.events, reportingController: "platform-ca-test", reportingInstance: "test-1", clock, rateLimit: false });
  return {
    names,
    clock,
    server,
    client,
    api,
    admin: controllerResources(client("admin"), names),
    csrInformer,
    events,
    async startInformers() {
      csrInformer.start();
      await csrInformer.waitForSync();
    },
    async stop() {
      await csrInformer.stop();
      await events.flush();
      for (const c of clients) c.close();
      await server.stop();
    },
  };
}

/**
 * The bootstrap policy lets only bootstrappers create requests; the tests let nodes and mallory ask too (asking is
 * not approval). The cleaner deletes requests, which the bootstrap controller role does not grant.
 */
function requesterGrant(names: GroupNames): ApiObject[] {
  const rbac = `${names.rbac}/v1`;
  return [
    { apiVersion: rbac, kind: "ClusterRole", metadata: { name: "test:csr-cleaner" }, rules: [{ apiGroups: [names.certificates], resources: ["certificatesigningrequests"], verbs: ["delete"] }] },
    {
      apiVersion: rbac,
      kind: "ClusterRoleBinding",
      metadata: { name: "test:csr-cleaner" },
      roleRef: { apiGroup: names.rbac, kind: "ClusterRole", name: "test:csr-cleaner" },
      subjects: [{ kind: "User", apiGroup: names.rbac, name: CONTROLLER_USER }],
    },
    { apiVersion: rbac, kind: "ClusterRole", metadata: { name: "test:csr-requester" }, rules: [{ apiGroups: [names.certificates], resources: ["certificatesigningrequests"], verbs: ["create", "get", "list", "watch"] }] },
    {
      apiVersion: rbac,
      kind: "ClusterRoleBinding",
      metadata: { name: "test:csr-requester" },
      roleRef: { apiGroup: names.rbac, kind: "ClusterRole", name: "test:csr-requester" },
      subjects: [{ kind: "Group", apiGroup: names.rbac, name: "system:nodes" }, { kind: "User", apiGroup: names.rbac, name: "mallory" }],
    },
  ];
}

/** A node-agent client request for `node` (CN system:node:<node>, O system:nodes). */
export function nodeClientCsr(names: GroupNames, node: string, o: CsrObjectOptions & CsrOptions = {}): Promise<CertificateSigningRequest> {
  return newCsrObject({ names, name: `${node}-client`, cn: `system:node:${node}`, o: ["system:nodes"], ...o });
}

/** Adds a condition through /approval as an administrator would with `certificate approve|deny`. */
export async function decide(h: Harness, name: string, type: "Approved" | "Denied", reason = "ByHand"): Promise<CertificateSigningRequest> {
  const current = await h.admin.csrs.get(name);
  const conditions = [...(current.status?.conditions ?? []), { type, status: "True" as const, reason, message: `${type} in a test` }];
  return h.admin.csrs.update({ ...current, status: { ...current.status, conditions } }, { subresource: "approval" });
}

/** Events about one object, read from the server. */
export async function eventsFor(h: Harness, obj: ApiObject): Promise<Event[]> {
  await h.events.flush();
  const list = await h.admin.events.list({ namespace: "default" });
  return list.items.filter((e) => e.regarding?.name === obj.metadata.name && e.regarding?.kind === obj.kind);
}

/**
 * Registers an afterEach that stops what a test started: the controllers' signal first, then anything else
 * (`also`, e.g. an extra informer), then the harness. Returns the function that tracks one test's world.
 */
export function stopAfterEach(): (h: Harness, stop: AbortController, also?: () => Promise<void>) => void {
  const started: { h: Harness; stop: AbortController; also?: () => Promise<void> }[] = [];
  afterEach(async () => {
    for (const w of started.splice(0)) {
      w.stop.abort();
      await w.also?.();
      await w.h.stop();
    }
  });
  return (h, stop, also) => void started.push({ h, stop, ...(also && { also }) });
}
