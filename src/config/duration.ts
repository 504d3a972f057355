// Go-style durations as configuration files write them ("30s", "1m0s", "8760h", "1.5h", "300ms"), in milliseconds.

const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  "\u00b5s": 1e-3,
  "\u03bcs": 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const DURATION_RE = /^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+$/;
const PART_RE = /(\d+(?:\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/g;
/** Go durations are int64 nanoseconds. */
const MAX_MS = 9_223_372_036_854.775;

export const GO_DURATION_SYNTAX = 'a duration such as "30s", "1m0s", "1.5h" or "8760h"';

/** Milliseconds in a Go duration string, or undefined when `text` is not one (or overflows int64 nanoseconds). */
export function parseGoDuration(text: string): number | undefined {
  if (text === "0" || text === "+0" || text === "-0") return 0;
  if (!DURATION_RE.test(text)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(PART_RE)) ms += Number(amount) * UNIT_MS[unit!]!;
  if (!(ms <= MAX_MS)) return undefined;
  return text.startsWith("-") ? -ms : ms;
}

/** Go's rendering of a duration: "0s", "1.5s", "1m0s", "8760h0m0s", "300ms", "2µs". */
export function formatGoDuration(ms: number): string {
  if (ms === 0) return "0s";
  const sign = ms < 0 ? "-" : "";
  // Whole milliseconds go through BigInt exactly; only the sub-millisecond part is rounded.
  const abs = Math.abs(ms);
  const whole = Math.trunc(abs);
  const ns = BigInt(whole) * 1_000_000n + BigInt(Math.round((abs - whole) * 1e6));
  if (ns < 1000n) return `${sign}${ns}ns`;
  if (ns < 1_000_000n) return `${sign}${fraction(ns, 3)}µs`;
  if (ns < 1_000_000_000n) return `${sign}${fraction(ns, 6)}ms`;
  const hours = ns / 3_600_000_000_000n;
  const minutes = (ns / 60_000_000_000n) % 60n;
  const seconds = fraction(ns % 60_000_000_000n, 9);
  if (hours > 0n) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0n) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}

/** `value / 10^digits` in decimal without trailing zeros. */
function fraction(value: bigint, digits: number): string {
  const scale = 10n ** BigInt(digits);
  const whole = value / scale;
  const rest = (value % scale).toString().padStart(digits, "0").replace(/0+$/, "");
  return rest ? `${whole}.${rest}` : `${whole}`;
}
