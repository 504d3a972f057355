// Text kept in base64 fields: a Secret's `data` values and a kubeconfig's `*-data` fields, encoded and read back.

/** `text` (UTF-8) as base64. */
export const toBase64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");

/** The UTF-8 text of a base64 value; undefined when there is none (or it is not a string). */
export const fromBase64 = (value: unknown): string | undefined => (typeof value === "string" ? Buffer.from(value, "base64").toString("utf8") : undefined);

/** A Secret's `data` with each value decoded (what is not a string is left out). */
export function decodedData(data: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof data === "object" && data !== null) for (const [k, v] of Object.entries(data)) if (typeof v === "string") out[k] = fromBase64(v)!;
  return out;
}
