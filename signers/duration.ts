// Lifetimes in signer policies: whole seconds, or a string of number+unit parts (s, m, h, d) like "90d" or "1h30m".

const UNIT_SECONDS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400 };
const DURATION_RE = /^(?:\d+[smhd])+$/;
const PART_RE = /(\d+)([smhd])/g;

export const DURATION_SYNTAX = 'whole seconds or a duration such as "90m", "24h", "1h30m", "90d"';

/** Seconds in `value`, or undefined when it is not a positive duration in the documented syntax. */
export function parseDurationSeconds(value: unknown): number | undefined {
  let seconds: number;
  if (typeof value === "number") {
    seconds = value;
  } else if (typeof value === "string" && /^\d+$/.test(value)) {
    seconds = Number(value);
  } else if (typeof value === "string" && DURATION_RE.test(value)) {
    seconds = 0;
    for (const [, amount, unit] of value.matchAll(PART_RE)) seconds += Number(amount) * (UNIT_SECONDS[unit!] ?? 0);
  } else {
    return undefined;
  }
  return Number.isSafeInteger(seconds) && seconds > 0 ? seconds : undefined;
}

/** The shortest exact rendering in the same syntax, for messages: 90000 → "1d1h", 5400 → "1h30m". */
export function formatDuration(seconds: number): string {
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [["d", 86_400], ["h", 3600], ["m", 60], ["s", 1]] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    }
  }
  return parts.length > 0 ? parts.join("") : "0s";
}
