// The API server's /healthz, /livez, /readyz and their checks (ping, storage, registry-bootstrap, kms-providers), one
// path per check.
import type { FastifyReply } from "fastify";
import { PlatformError } from "../../errors.js";
import type { Storage } from "../storage/types.js";
import { checkReport, healthReport, type CheckResult, type HealthText } from "./health-report.js";
import type { RawQuery } from "./query.js";

export type HealthEndpoint = "healthz" | "livez" | "readyz";

/** One named check: resolves when it passes, rejects with the reason when it fails. */
export interface Check {
  readonly name: string;
  run(): Promise<void>;
}

export interface HealthSources {
  readonly storage: Storage;
  /** Whether the server finished starting (and is not stopping). */
  ready(): boolean;
  /** Checks of healthz and readyz beyond these (upstream's `kms-providers`); not of livez: a restart would not help. */
  readonly checks?: () => readonly Check[];
  /** More checks of /readyz, from the request pipeline. */
  readonly readinessChecks?: readonly Check[];
}

/**
 * The checks of each endpoint: `ping`, `storage` (the store answers; upstream's `etcd`), and, except on livez,
 * `registry-bootstrap` (the server finished starting and is not stopping) and the sources' own checks.
 */
function checksOf(endpoint: HealthEndpoint, o: HealthSources): Check[] {
  const checks: Check[] = [
    { name: "ping", run: async () => undefined },
    { name: "storage", run: async () => void (await o.storage.revision()) },
  ];
  if (endpoint !== "livez") {
    checks.push({
      name: "registry-bootstrap",
      run: async () => {
        if (!o.ready()) throw new Error("the server has not finished starting, or is stopping");
      },
    });
    checks.push(...(o.checks?.() ?? []));
    if (endpoint === "readyz") checks.push(...(o.readinessChecks ?? []));
  }
  return checks;
}

/** Names of the checks `?exclude=` asked to skip (the parameter may repeat). */
function excludedOf(query: RawQuery): Set<string> {
  const v = query.exclude;
  return new Set((Array.isArray(v) ? v : v === undefined ? [] : [v]).map(String));
}

const text = (reply: FastifyReply, t: HealthText) =>
  reply.code(t.code).type("text/plain; charset=utf-8").header("X-Content-Type-Options", "nosniff").send(t.body);

/** Runs a check: passed, or failed with the reason it gave. */
const outcome = (c: Check): Promise<CheckResult> =>
  c.run().then(
    () => ({ name: c.name, ok: true }),
    (err: unknown) => ({ name: c.name, ok: false, detail: err instanceof Error ? err.message : String(err) }),
  );

/**
 * Answers an endpoint (`name` undefined) or one of its checks. A failing endpoint always lists its checks, the reason
 * withheld (the endpoints are public); the check's own path, which needs `system:monitoring`, gives the reason.
 */
export async function serveHealth(reply: FastifyReply, endpoint: HealthEndpoint, name: string | undefined, query: RawQuery, o: HealthSources): Promise<FastifyReply> {
  const checks = checksOf(endpoint, o);
  if (name !== undefined) {
    const check = checks.find((c) => c.name === name);
    if (!check) throw new PlatformError("NOT_FOUND", `the server could not find the requested resource (no ${endpoint} check named ${JSON.stringify(name)})`);
    return text(reply, checkReport(await outcome(check)));
  }
  const excluded = excludedOf(query);
  // An excluded check is not run at all.
  const results = await Promise.all(checks.map((c) => (excluded.has(c.name) ? { name: c.name, ok: true } : outcome(c))));
  return text(reply, healthReport(endpoint, results, { verbose: query.verbose !== undefined, excluded, withhold: true }));
}
