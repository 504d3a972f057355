// Prints rows as a plain-text table with upper-case headers, columns padded to their widest cell (kubectl style).

export type TableRow = readonly string[];

/**
 * Renders `headers` and `rows` as aligned columns separated by three spaces; the last column is not padded. Headers
 * are upper-cased unless `asWritten` (kubectl prints a few tables, such as `auth can-i --list`, with headers as written).
 */
export function formatTable(headers: readonly string[], rows: readonly TableRow[], asWritten = false): string {
  const all = [asWritten ? headers : headers.map((h) => h.toUpperCase()), ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
  const line = (r: TableRow): string =>
    r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("   ").trimEnd();
  return `${all.map(line).join("\n")}\n`;
}
