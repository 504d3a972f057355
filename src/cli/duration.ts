// Reads a duration flag (`8760h`, `1h30m`, `90d`, whole seconds) in the one duration syntax, as whole seconds.
import { invalidOption } from "../errors.js";
import { DURATION_SYNTAX, parseDurationSeconds } from "../fields/duration.js";

/** Positive whole seconds in `value`; INVALID_OPTION (a usage error on the command line) names `flag` otherwise. */
export function durationFlag(value: string, flag: string): number {
  const seconds = parseDurationSeconds(value);
  if (seconds === undefined) throw invalidOption(flag, `to be ${DURATION_SYNTAX}`, value);
  return seconds;
}
