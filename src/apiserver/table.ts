// Server-side printing for kubectl: a meta.k8s.io Table with NAME, the definition's columns and AGE.
import type { ApiObject, TableColumnDefinition } from "../api/meta.js";
import type { ResourceDefinition } from "./registry/strategy.js";
import { ageColumn, nameColumn, since } from "./registry/resources/printing.js";

/** kubectl's protocol group for Table and PartialObjectMetadata; a constant of the client, not our API group. */
const META_GROUP = "meta.k8s.io";

export type IncludeObject = "None" | "Metadata" | "Object";

export interface TableRow {
  cells: unknown[];
  object?: ApiObject;
}

export interface Table {
  kind: "Table";
  apiVersion: string;
  metadata: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  columnDefinitions: TableColumnDefinition[];
  rows: TableRow[];
}

const has = (cols: readonly TableColumnDefinition[], name: string) => cols.some((c) => c.name.toLowerCase() === name);

export class TableConverter {
  readonly columns: TableColumnDefinition[];
  readonly #addName: boolean;
  readonly #addAge: boolean;

  constructor(private readonly def: ResourceDefinition) {
    const own = def.columns ?? [];
    this.#addName = !has(own, "name");
    this.#addAge = def.addAge !== false && !has(own, "age");
    this.columns = [...(this.#addName ? [nameColumn] : []), ...own, ...(this.#addAge ? [ageColumn] : [])];
  }

  row(obj: ApiObject, now: Date, include: IncludeObject): TableRow {
    const own = this.def.columns?.length ? this.ownCells(obj, now) : [];
    const cells = [
      ...(this.#addName ? [obj.metadata.name ?? ""] : []),
      ...own,
      ...(this.#addAge ? [since(obj.metadata.creationTimestamp, now)] : []),
    ];
    if (include === "None") return { cells };
    if (include === "Object") return { cells, object: obj };
    return { cells, object: { kind: "PartialObjectMetadata", apiVersion: `${META_GROUP}/v1`, metadata: obj.metadata } };
  }

  table(objects: Iterable<ApiObject>, now: Date, include: IncludeObject, version: "v1" | "v1beta1", metadata: Table["metadata"]): Table {
    const rows: TableRow[] = [];
    for (const obj of objects) rows.push(this.row(obj, now, include));
    return { kind: "Table", apiVersion: `${META_GROUP}/${version}`, metadata, columnDefinitions: this.columns, rows };
  }

  /** A row that cannot be computed (an object stored before a rule existed) still prints, with placeholders. */
  private ownCells(obj: ApiObject, now: Date): unknown[] {
    const n = this.def.columns!.length;
    try {
      const cells = this.def.row ? this.def.row(obj, now) : [];
      return Array.from({ length: n }, (_, i) => cells[i] ?? "<none>");
    } catch {
      return Array.from({ length: n }, () => "<unknown>");
    }
  }
}
