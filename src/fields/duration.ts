// The one duration syntax of files and flags: Go's ("1h30m", "1.5h", "300ms", "2µs") plus days ("90d") and whole seconds ("600", 600).

/** Nanoseconds per unit; Go's units plus `d` (24h), which lifetimes are usually written in. */
const UNIT_NS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  "\u00b5s": 1_000n,
  "\u03bcs": 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
  d: 86_400_000_000_000n,
};

const UNITS = "ns|us|\u00b5s|\u03bcs|ms|s|m|h|d";
const DURATION_RE = new RegExp(`^[-+]?(?:(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:${UNITS}))+$`);
const PART_RE = new RegExp(`(\\d*)(?:\\.(\\d*))?(${UNITS})`, "g");
const SECONDS_RE = /^[-+]?\d+$/;
/** Go durations are int64 nanoseconds; larger values are refused rather than rounded. */
const MAX_NS = 2n ** 63n - 1n;

/** How messages describe the syntax, in the one place it is documented (docs/configuration.md, "Durations"). */
export const DURATION_SYNTAX = 'a duration such as "30s", "1h30m", "1.5h", "300ms", "90d" or whole seconds';

/**
 * Milliseconds in `value` (possibly fractional or negative), or undefined when it is not a duration: a string of
 * number+unit parts (Go's syntax plus `d`), or whole seconds as a string or a number. Never throws.
 */
export function parseDuration(value: unknown): number | undefined {
  let ns: bigint;
  let negative = false;
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) return undefined;
    negative = value < 0;
    ns = BigInt(Math.abs(value)) * UNIT_NS.s!;
  } else if (typeof value === "string" && SECONDS_RE.test(value)) {
    negative = value.startsWith("-");
    ns = BigInt(value.replace(/^[-+]/, "")) * UNIT_NS.s!;
  } else if (typeof value === "string" && DURATION_RE.test(value)) {
    negative = value.startsWith("-");
    ns = 0n;
    // Integer arithmetic as Go does it, so "5.001s" is exactly 5001 ms; digits below a nanosecond are dropped.
    for (const [, whole, fraction = "", unit] of value.matchAll(PART_RE)) {
      const size = UNIT_NS[unit!]!;
      ns += BigInt(whole || "0") * size;
      if (fraction !== "") ns += (BigInt(fraction) * size) / 10n ** BigInt(fraction.length);
    }
  } else {
    return undefined;
  }
  if (ns > MAX_NS) return undefined;
  const ms = Number(ns / 1_000_000n) + Number(ns % 1_000_000n) / 1e6;
  return negative && ms !== 0 ? -ms : ms;
}

/** Positive whole seconds in `value` (the lifetimes of certificates), or undefined. */
export function parseDurationSeconds(value: unknown): number | undefined {
  const ms = parseDuration(value);
  return ms !== undefined && ms > 0 && Number.isSafeInteger(ms / 1000) ? ms / 1000 : undefined;
}

/**
 * The shortest exact rendering in the same syntax: "0s", "1d1h", "1h30m", "4m5.001s", "300ms", "1.1µs", "1ns".
 * Reading it back gives the same value for whole milliseconds and for sub-millisecond values down to a nanosecond.
 */
export function formatDuration(ms: number): string {
  if (ms === 0 || !Number.isFinite(ms)) return ms === 0 ? "0s" : String(ms);
  const sign = ms < 0 ? "-" : "";
  // Whole milliseconds go through BigInt exactly; only the sub-millisecond part is rounded.
  const abs = Math.abs(ms);
  const whole = Math.trunc(abs);
  const ns = BigInt(whole) * 1_000_000n + BigInt(Math.round((abs - whole) * 1e6));
  if (ns < 1_000n) return `${sign}${ns}ns`;
  if (ns < 1_000_000n) return `${sign}${decimal(ns, 3)}µs`;
  if (ns < 1_000_000_000n) return `${sign}${decimal(ns, 6)}ms`;
  const parts = [
    [ns / UNIT_NS.d!, "d"],
    [(ns % UNIT_NS.d!) / UNIT_NS.h!, "h"],
    [(ns % UNIT_NS.h!) / UNIT_NS.m!, "m"],
  ] as const;
  const seconds = ns % UNIT_NS.m!;
  const text = parts.filter(([n]) => n > 0n).map(([n, unit]) => `${n}${unit}`).join("");
  return `${sign}${text}${seconds > 0n ? `${decimal(seconds, 9)}s` : ""}`;
}

/** formatDuration for a number of seconds: 90000 → "1d1h", 5400 → "1h30m". */
export function formatDurationSeconds(seconds: number): string {
  return formatDuration(seconds * 1000);
}

/** `value / 10^digits` in decimal without trailing zeros. */
function decimal(value: bigint, digits: number): string {
  const scale = 10n ** BigInt(digits);
  const rest = (value % scale).toString().padStart(digits, "0").replace(/0+$/, "");
  return rest ? `${value / scale}.${rest}` : `${value / scale}`;
}
