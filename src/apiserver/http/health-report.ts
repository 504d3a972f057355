// The text of upstream's health endpoints, for the API server and the controllers' ops endpoint alike: `ok`,
// `[+]name ok` lines with `?verbose`, `?exclude=`, `… check passed|failed`, and one check on its own path.

/** One check's outcome; `detail` is why it failed, or a state worth showing beside `ok`. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail?: string;
}

export interface HealthText {
  /** 200, or 503 when a check failed (load balancers and probes take the process out). */
  readonly code: number;
  readonly body: string;
}

export interface ReportOptions {
  readonly verbose: boolean;
  /** Checks `?exclude=` names: counted as passed. */
  readonly excluded: ReadonlySet<string>;
  /** Say `reason withheld` instead of a failure's detail (an endpoint anyone may read). */
  readonly withhold: boolean;
}

/** An endpoint's answer: `ok`, or its lines (always when a check failed) and `<endpoint> check passed|failed`. */
export function healthReport(endpoint: string, results: readonly CheckResult[], o: ReportOptions): HealthText {
  const unmatched = new Set(o.excluded);
  const lines = results.map((r) => {
    if (unmatched.delete(r.name)) return `[+]${r.name} excluded: ok`;
    if (r.ok) return `[+]${r.name} ok${r.detail ? ` (${r.detail})` : ""}`;
    return `[-]${r.name} failed: ${o.withhold ? "reason withheld" : (r.detail ?? "not ready")}`;
  });
  const failed = lines.some((l) => l.startsWith("[-]"));
  if (unmatched.size > 0) lines.push(`warn: some health checks cannot be excluded: no matches for ${[...unmatched].map((e) => JSON.stringify(e)).join(",")}`);
  if (!failed && !o.verbose) return { code: 200, body: "ok" };
  return { code: failed ? 503 : 200, body: `${lines.join("\n")}\n${endpoint} check ${failed ? "failed" : "passed"}\n` };
}

/** One check on its own path (`/readyz/storage`): `ok`, or 503 with the reason. */
export function checkReport(result: CheckResult): HealthText {
  return result.ok ? { code: 200, body: "ok" } : { code: 503, body: `internal server error: ${result.detail ?? "not ready"}\n` };
}
