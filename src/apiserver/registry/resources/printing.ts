// Table cells as kubectl shows them: human durations ("5m30s", "3d4h"), ages, "<none>", and the Name/Age columns.
import type { TableColumnDefinition } from "../../../api/meta.js";

export const NONE = "<none>";

/** Upstream's HumanDuration: short, coarser as the duration grows. */
export function humanDuration(totalSeconds: number): string {
  const seconds = Math.trunc(totalSeconds);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(seconds / 3600);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${hours / 24}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const d = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return d === 0 ? `${y}y` : `${y}y${d}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** Upstream's ShortHumanDuration: one unit, rounded down ("59s", "119m" is "1h", "23h", "3d", "2y"). */
export function shortHumanDuration(totalSeconds: number): string {
  const seconds = Math.trunc(totalSeconds);
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.trunc(seconds / 60)}m`;
  const hours = Math.trunc(seconds / 3600);
  if (hours < 24) return `${hours}h`;
  return hours < 24 * 365 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24 / 365)}y`;
}

/** Time since `timestamp` at `now`, "<unknown>" when there is none. */
export function since(timestamp: unknown, now: Date): string {
  if (typeof timestamp !== "string" || timestamp === "") return "<unknown>";
  const at = Date.parse(timestamp);
  if (Number.isNaN(at)) return "<unknown>";
  return humanDuration((now.getTime() - at) / 1000);
}

export const nameColumn: TableColumnDefinition = { name: "Name", type: "string", format: "name", description: "Name of the object.", priority: 0 };
export const ageColumn: TableColumnDefinition = { name: "Age", type: "string", description: "Time since the object was created.", priority: 0 };

export function column(name: string, description: string, priority = 0, type: TableColumnDefinition["type"] = "string"): TableColumnDefinition {
  return { name, type, description, priority };
}

/** A string field's value, "" when unset or not a string (rows are drawn from whatever is stored). */
export function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The cell of a string field: the value, or "<none>" when unset or empty. */
export function orNone(value: unknown): string {
  return typeof value === "string" && value !== "" ? value : NONE;
}
