// /healthz, /livez, /readyz as upstream answers them: `ok`, `?verbose` lines, `?exclude=`, and one path per check.
import type { FastifyReply } from "fastify";
import { PlatformError } from "../../errors.js";
import type { Storage } from "../storage/types.js";
import type { RawQuery } from "./query.js";

export type HealthEndpoint = "healthz" | "livez" | "readyz";

/** One named check: resolves when it passes, rejects with the reason when it fails. */
interface Check {
  readonly name: string;
  run(): Promise<void>;
}

export interface HealthSources {
  readonly storage: Storage;
  /** Whether the server finished starting (and is not stopping). */
  ready(): boolean;
}

/**
 * The checks of each endpoint: `ping`, `storage` (the store answers; upstream's `etcd`), and, except on livez,
 * `registry-bootstrap` (the server finished starting and is not stopping).
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
  }
  return checks;
}

/** Names of the checks `?exclude=` asked to skip (the parameter may repeat). */
function excludedOf(query: RawQuery): Set<string> {
  const v = query.exclude;
  return new Set((Array.isArray(v) ? v : v === undefined ? [] : [v]).map(String));
}

const text = (reply: FastifyReply, code: number, body: string) =>
  reply.code(code).type("text/plain; charset=utf-8").header("X-Content-Type-Options", "nosniff").send(body);

/**
 * Answers an endpoint (`name` undefined) or one of its checks. A failing endpoint always lists its checks, the reason
 * withheld (the endpoints are public); the check's own path, which needs `system:monitoring`, gives the reason.
 * Failures answer 503 so load balancers and probes take the server out.
 */
export async function serveHealth(reply: FastifyReply, endpoint: HealthEndpoint, name: string | undefined, query: RawQuery, o: HealthSources): Promise<FastifyReply> {
  const checks = checksOf(endpoint, o);
  if (name !== undefined) {
    const check = checks.find((c) => c.name === name);
    if (!check) throw new PlatformError("NOT_FOUND", `the server could not find the requested resource (no ${endpoint} check named ${JSON.stringify(name)})`);
    const failure = await check.run().then(() => undefined, (err: unknown) => (err instanceof Error ? err.message : String(err)));
    return failure === undefined ? text(reply, 200, "ok") : text(reply, 503, `internal server error: ${failure}\n`);
  }
  const excluded = excludedOf(query);
  const results = await Promise.all(
    checks.map(async (c) => {
      if (excluded.delete(c.name)) return `[+]${c.name} excluded: ok`;
      return c.run().then(() => `[+]${c.name} ok`, () => `[-]${c.name} failed: reason withheld`);
    }),
  );
  const failed = results.some((line) => line.startsWith("[-]"));
  let lines = results.map((line) => `${line}\n`).join("");
  if (excluded.size > 0) lines += `warn: some health checks cannot be excluded: no matches for ${[...excluded].map((e) => JSON.stringify(e)).join(",")}\n`;
  if (failed) return text(reply, 503, `${lines}${endpoint} check failed\n`);
  if (query.verbose === undefined) return text(reply, 200, "ok");
  return text(reply, 200, `${lines}${endpoint} check passed\n`);
}
