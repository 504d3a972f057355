// The one way a time is written as RFC 3339 with seconds precision: ObjectMeta and condition timestamps, token and
// credential expirations, certificate dates shown to people.

/** The last second formatted: a write stamps several fields, and a busy server many writes, within one second. */
let formatted = { second: NaN, text: "" };

/** `2026-11-28T15:10:00Z`: the time in UTC, its fraction of a second dropped (rounded down, as upstream's metav1.Time). */
export function rfc3339(date: Date): string {
  const second = Math.floor(date.getTime() / 1000);
  if (second !== formatted.second) formatted = { second, text: new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, "Z") };
  return formatted.text;
}
