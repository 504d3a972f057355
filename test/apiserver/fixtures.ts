// Builders for API server tests: a registry over memory storage and an in-process server (objects: test/fixtures/objects.ts).
import { afterAll, beforeAll } from "vitest";
import { groupNames } from "../../src/api/group.js";
import { silentLogger } from "../../src/logger.js";
import { insecureLocalPipeline, type Pipeline } from "../../src/apiserver/pipeline.js";
import { Registry } from "../../src/apiserver/registry/registry.js";
import { allResources } from "../../src/apiserver/registry/resources/index.js";
import { MemoryStorage } from "../../src/apiserver/storage/memory.js";
import type { Storage } from "../../src/apiserver/storage/types.js";
import { createApiServer, type ApiServer, type ApiServerOptions } from "../../src/apiserver/server.js";
import { FakeClock } from "../../src/time/fake-clock.js";
import { PlatformError } from "../../src/errors.js";

export { FakeClock };

export interface RegistryFixtureOptions {
  readonly suffix?: string;
  readonly clock?: FakeClock;
  readonly storage?: Storage;
  readonly pipeline?: Pipeline;
}

export async function registryFixture(opts: RegistryFixtureOptions = {}) {
  const names = groupNames(opts.suffix);
  const clock = opts.clock ?? new FakeClock();
  const storage = opts.storage ?? new MemoryStorage({ clock });
  const definitions = allResources(names);
  const registry = new Registry({ storage, names, clock, logger: silentLogger(), pipeline: opts.pipeline ?? insecureLocalPipeline(silentLogger()), definitions });
  await registry.bootstrap();
  const store = (kind: string) => registry.store(definitions.find((d) => d.kind === kind)!);
  return { names, clock, storage, registry, store };
}

/** The PlatformError `work` fails with (a test failure when it succeeds or throws something else). */
export async function failure(work: Promise<unknown>): Promise<PlatformError> {
  try {
    await work;
  } catch (err) {
    if (err instanceof PlatformError) return err;
    throw err;
  }
  throw new Error("expected a PlatformError");
}

/** An API server over memory storage on a free loopback port, plain HTTP, every request a local admin. */
export async function serverFixture(opts: Partial<ApiServerOptions> & { clock?: FakeClock } = {}): Promise<ApiServer & { storage: Storage }> {
  const storage = opts.storage ?? new MemoryStorage();
  const server = createApiServer({ insecure: true, pipeline: insecureLocalPipeline(silentLogger()), ...opts, storage });
  await server.start();
  return Object.assign(server, { storage });
}

/** An events/v1 Event (platform.io) about a CSR, as the controllers record one. */
export function newEvent(name: string, regardingName: string) {
  return {
    apiVersion: "events.platform.io/v1",
    kind: "Event",
    metadata: { name },
    eventTime: "2030-01-02T03:04:05.000000Z",
    action: "Sign",
    reason: "CertificateIssued",
    note: "issued",
    type: "Normal",
    regarding: { apiVersion: "certificates.platform.io/v1", kind: "CertificateSigningRequest", name: regardingName, uid: `uid-${regardingName}` },
    reportingController: "platform-ca-controller-manager",
    reportingInstance: "host-1",
  };
}

/** The Accept list kubectl sends for `get`: Table first, plain JSON as the fallback. */
export const TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
export const SA_PATH = "/api/v1/namespaces/default/serviceaccounts";

/** One server for a whole test file (started before, stopped after), and unique names for its objects. */
export function sharedServer(): { readonly server: ApiServer & { storage: Storage }; readonly base: string; unique(prefix: string): string } {
  let server: (ApiServer & { storage: Storage }) | undefined;
  let counter = 0;
  beforeAll(async () => {
    server = await serverFixture();
  });
  afterAll(async () => {
    await server?.stop();
  });
  return {
    get server() {
      return server!;
    },
    get base() {
      return server!.address;
    },
    unique: (prefix) => `${prefix}-${++counter}`,
  };
}
