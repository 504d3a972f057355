// Prints the server's meta.k8s.io Table as kubectl does: upper-case headers, aligned columns, optional namespace/kind/labels.
import type { TableColumnDefinition } from "../../../api/meta.js";
import { formatTable } from "../../table.js";

export interface ServerTable {
  readonly kind?: string;
  readonly columnDefinitions: readonly TableColumnDefinition[];
  readonly rows: readonly { readonly cells: readonly unknown[]; readonly object?: { metadata?: { namespace?: string; name?: string; labels?: Record<string, string> } } }[];
}

export interface TableOptions {
  /** Columns of priority > 0 too (-o wide). */
  readonly wide?: boolean;
  /** A NAMESPACE column first (-A). */
  readonly withNamespace?: boolean;
  /** Names as `kind.group/name` (several resource types in one get). */
  readonly kindPrefix?: string;
  /** A LABELS column last (--show-labels). */
  readonly showLabels?: boolean;
}

export interface TableView {
  readonly headers: string[];
  readonly rows: string[][];
}

const cellText = (cell: unknown): string => (cell === null || cell === undefined ? "<none>" : typeof cell === "string" ? cell : typeof cell === "object" ? JSON.stringify(cell) : String(cell));

function labelsText(labels: Record<string, string> | undefined): string {
  const entries = Object.entries(labels ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return entries.length === 0 ? "<none>" : entries.map(([k, v]) => `${k}=${v}`).join(",");
}

/** The visible headers and cells of a server Table. */
export function tableView(table: ServerTable, o: TableOptions = {}): TableView {
  const shown = table.columnDefinitions.map((c, i) => ({ c, i })).filter(({ c }) => o.wide || (c.priority ?? 0) === 0);
  const headers = [...(o.withNamespace ? ["NAMESPACE"] : []), ...shown.map(({ c }) => c.name.toUpperCase()), ...(o.showLabels ? ["LABELS"] : [])];
  const rows = table.rows.map((row) => [
    ...(o.withNamespace ? [row.object?.metadata?.namespace ?? ""] : []),
    ...shown.map(({ c, i }) => {
      const text = cellText(row.cells[i]);
      return o.kindPrefix && c.format === "name" ? `${o.kindPrefix}/${text}` : text;
    }),
    ...(o.showLabels ? [labelsText(row.object?.metadata?.labels)] : []),
  ]);
  return { headers, rows };
}

/** Aligned text of a view; without headers the widths come from the rows alone. */
export function renderTable(view: TableView, noHeaders = false): string {
  if (!noHeaders) return formatTable(view.headers, view.rows);
  if (view.rows.length === 0) return "";
  return formatTable(view.headers.map(() => ""), view.rows).replace(/^\n/, "");
}

/** Rows printed one event at a time (get -w): columns keep the widths already printed, growing when needed. */
export class StreamingTable {
  #widths: number[] = [];

  constructor(private readonly noHeaders: boolean) {}

  /** The header line (once) and the rows, padded to the widths seen so far. */
  render(view: TableView, withHeader: boolean): string {
    const all = withHeader && !this.noHeaders ? [view.headers, ...view.rows] : view.rows;
    for (const row of all) row.forEach((cell, i) => (this.#widths[i] = Math.max(this.#widths[i] ?? 0, cell.length)));
    return all.map((row) => `${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(this.#widths[i]!))).join("   ").trimEnd()}\n`).join("");
  }
}
