// Reads a duration flag (`8760h`, `1h30m`, `90d`, `500ms`, whole seconds) in the one duration syntax.
import { invalidOption } from "../errors.js";
import { DURATION_SYNTAX, parseDuration, parseDurationSeconds } from "../fields/duration.js";

/** Positive whole seconds in `value`; INVALID_OPTION (a usage error on the command line) names `flag` otherwise. */
export function durationFlag(value: string, flag: string): number {
  const seconds = parseDurationSeconds(value);
  if (seconds === undefined) throw invalidOption(flag, `to be ${DURATION_SYNTAX}`, value);
  return seconds;
}

/** Positive milliseconds in `value` (`1m0s`, `500ms`), for flags finer than a second; INVALID_OPTION otherwise. */
export function durationFlagMs(value: string, flag: string): number {
  const ms = parseDuration(value);
  if (ms === undefined || !(ms > 0)) throw invalidOption(flag, `to be a positive duration such as "1m0s", "30s" or "500ms"`, value);
  return ms;
}
