// Field ownership of one resource's writes: managedFields after an update, and server-side apply with conflicts.
import type { ApiObject } from "../../api/meta.js";
import type { ObjectNode } from "../../api/schema.js";
import { PlatformError } from "../../errors.js";
import { compareObjects, fieldSetOf } from "./compare.js";
import { createdFieldsV1 } from "./created-fields.js";
import { FieldSet, pathString } from "./field-set.js";
import { conflictMessage, decodeManaged, describeManager, encodeManaged, ownable, ownsNothing, release, sameManager, type Conflict, type Managed, type ManagerIdentity } from "./managers.js";
import { mergeConfig, pruneUnowned } from "./merge.js";

/** Upstream's name for the owner of what an object held before its first apply, when it had no managedFields. */
export const BEFORE_FIRST_APPLY = "before-first-apply";

/** Without a field schema every top-level field is one leaf. */
const OPAQUE: ObjectNode = { type: "object", fields: {}, required: [], preserveUnknown: true };

export interface Writer {
  readonly manager: string;
  readonly subresource?: string | undefined;
  /** RFC 3339, the entry's `time` when the write changes what it owns. */
  readonly time: string;
}

export class FieldManager {
  private readonly schema: ObjectNode;

  constructor(
    schema: ObjectNode | undefined,
    private readonly apiVersion: string,
    /** Whether the kind has a status subresource, whose fields its main resource does not write. */
    private readonly hasStatus: boolean,
  ) {
    this.schema = schema ?? OPAQUE;
  }

  /**
   * Sets `next.metadata.managedFields` after a create (`live` undefined), update or non-apply patch: the writer
   * takes every field it added or changed, from whoever owned it; removed fields leave every manager. The managers
   * start from the ones `next` carries, when it carries readable ones (a client may rewrite them), else from `live`'s.
   */
  update(live: ApiObject | undefined, next: ApiObject, writer: Writer): void {
    const sent = writer.subresource === undefined ? decodeManaged(next.metadata.managedFields) : undefined;
    // A create with no managers yet (every node's CSR, every Event): one entry, straight from the object.
    if (live === undefined && sent === undefined && writer.subresource === undefined) {
      const fieldsV1 = createdFieldsV1(next, this.schema, this.hasStatus);
      if (fieldsV1 === undefined) delete next.metadata.managedFields;
      else next.metadata.managedFields = [{ manager: writer.manager, operation: "Update", apiVersion: this.apiVersion, time: writer.time, fieldsType: "FieldsV1", fieldsV1 }];
      return;
    }
    const managed = sent ?? decodeManaged(live?.metadata.managedFields, true) ?? [];
    this.updateManaged(managed, live, next, { manager: writer.manager, operation: "Update", apiVersion: this.apiVersion, subresource: writer.subresource }, writer.time);
    this.store(next, managed);
  }

  private updateManaged(managed: Managed[], live: unknown, next: unknown, id: ManagerIdentity, time: string | undefined): void {
    const c = compareObjects(live, next, this.schema);
    const taken = this.ownable(c.added.union(c.modified), id);
    for (const m of managed) {
      release(m, taken);
      release(m, c.removed);
    }
    if (!taken.empty) {
      const own = managed.find((m) => sameManager(m, id));
      if (own) {
        own.set = own.set.union(taken);
        own.time = time;
      } else managed.push({ ...id, time, set: taken });
    }
    removeEmpty(managed);
  }

  /**
   * Server-side apply of `config` to `live` (undefined: create): the merged object with managedFields set.
   * Conflicts with other managers are a 409 unless `force`, which takes the fields from them.
   */
  apply(live: ApiObject | undefined, config: ApiObject, writer: Writer, force: boolean): ApiObject {
    const id: ManagerIdentity = { manager: writer.manager, operation: "Apply", apiVersion: this.apiVersion, subresource: writer.subresource };
    const base = live ?? ({ apiVersion: config.apiVersion, kind: config.kind, metadata: {} } as ApiObject);
    let managed = decodeManaged(live?.metadata.managedFields, true) ?? [];
    if (live !== undefined && managed.length === 0) {
      // An object no one has claimed yet: what it holds belongs to a placeholder manager, as upstream.
      this.updateManaged(managed, undefined, live, { manager: BEFORE_FIRST_APPLY, operation: "Update", apiVersion: this.apiVersion }, undefined);
    }
    const last = managed.find((m) => sameManager(m, id));
    const set = this.ownable(fieldSetOf(config, this.schema), id);
    managed = managed.filter((m) => m !== last);
    const applier: Managed = { ...id, time: last?.time, set };
    managed.push(applier);
    const merged = mergeConfig(base, config, this.schema) as ApiObject;
    if (last !== undefined && !last.set.empty) {
      const owned = managed.reduce((all, m) => all.union(m.set), new FieldSet());
      pruneUnowned(merged, last.set, owned, this.schema);
    }
    const c = compareObjects(base, merged, this.schema);
    const changed = this.ownable(c.added.union(c.modified), id);
    const conflicts: Conflict[] = [];
    for (const m of managed) {
      if (m === applier) continue;
      const clash = m.set.intersection(changed);
      for (const path of clash.paths()) conflicts.push({ manager: m, path });
      m.set = m.set.difference(clash).difference(c.removed);
    }
    if (conflicts.length > 0 && !force) throw applyConflict(conflicts);
    if (!c.added.empty || !c.removed.empty || !c.modified.empty || last === undefined || !last.set.equals(set)) applier.time = writer.time;
    removeEmpty(managed);
    this.store(merged, managed);
    return merged;
  }

  private ownable(set: FieldSet, id: ManagerIdentity): FieldSet {
    return ownable(set, id.subresource, this.hasStatus);
  }

  private store(obj: ApiObject, managed: readonly Managed[]): void {
    if (managed.length === 0) delete obj.metadata.managedFields;
    else obj.metadata.managedFields = encodeManaged(managed);
  }
}

function removeEmpty(managed: Managed[]): void {
  for (let i = managed.length - 1; i >= 0; i--) if (ownsNothing(managed[i]!)) managed.splice(i, 1);
}

/** 409 Conflict with one cause per conflicting field, as upstream's apply conflict. */
export function applyConflict(conflicts: readonly Conflict[]): PlatformError {
  const sorted = [...conflicts].sort((a, b) => (describeManager(a.manager) < describeManager(b.manager) ? -1 : describeManager(a.manager) > describeManager(b.manager) ? 1 : 0));
  return new PlatformError("CONFLICT", conflictMessage(sorted), {
    causes: sorted.map((c) => ({ reason: "FieldManagerConflict", message: `conflict with ${describeManager(c.manager)}`, field: pathString(c.path) })),
  });
}
