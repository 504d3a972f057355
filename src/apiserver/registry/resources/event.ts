// Event (events v1, namespaced): required reporting fields and limits for new events, immutable after creation but for the
// series; and the conversion to and from the core v1 view of the same stored objects.
import { Buffer } from "node:buffer";
import type { ApiObject } from "../../../api/meta.js";
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { EVENT_FIELD_LIMIT, EVENT_KIND, EVENT_NOTE_LIMIT_BYTES, EVENT_TYPES, EVENT_VERSION, type CoreEvent, type Event } from "../../../api/types/event.js";
import type { StorageView } from "../../storage/view.js";
import { collectionPrefix } from "../generic.js";
import { serializeForStorage } from "../stored.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { ownFields } from "../type-check.js";
import { invalid, notSupported, required, validateQualifiedName } from "../validation.js";
import { buildStrategy, defineResource, immutableFields, isRecord } from "./strategy-kit.js";
import { column, NONE, since, text } from "./printing.js";

/**
 * Upstream wants a series count of at least 2 (a series starts with the second occurrence); 1 is accepted here so
 * a recorder may open a series with its first occurrence (a deliberate difference from upstream).
 */
export const EVENT_SERIES_MIN_COUNT = 1;

const schema = kindSchema(EVENT_KIND, "events");
/** Everything but the series (and metadata) is fixed once an event is written. */
const IMMUTABLE = Object.keys(ownFields(schema).fields).filter((f) => f !== "series");

function requiredShort(ev: Event, name: "action" | "reason" | "reportingInstance"): FieldError[] {
  const value = ev[name];
  if (!value) return [required(name)];
  return value.length > EVENT_FIELD_LIMIT ? [invalid(name, "", `can have at most ${EVENT_FIELD_LIMIT} characters`)] : [];
}

function validateEvent(obj: ApiObject): FieldError[] {
  const ev = obj as Event;
  const errors: FieldError[] = [];
  if (!ev.eventTime) errors.push(required("eventTime"));
  errors.push(...requiredShort(ev, "action"), ...requiredShort(ev, "reason"), ...requiredShort(ev, "reportingInstance"));
  if (!ev.reportingController) errors.push(required("reportingController"));
  else errors.push(...validateQualifiedName("reportingController", ev.reportingController));
  if (!(EVENT_TYPES as readonly string[]).includes(ev.type ?? "")) errors.push(notSupported("type", ev.type ?? "", EVENT_TYPES));
  if (ev.note !== undefined && Buffer.byteLength(ev.note) > EVENT_NOTE_LIMIT_BYTES) {
    errors.push(invalid("note", "", `can have at most ${EVENT_NOTE_LIMIT_BYTES} bytes`));
  }
  if (ev.series) {
    if (ev.series.count === undefined) errors.push(required("series.count"));
    else if (ev.series.count < EVENT_SERIES_MIN_COUNT) errors.push(invalid("series.count", ev.series.count, `should be at least ${EVENT_SERIES_MIN_COUNT}`));
    if (!ev.series.lastObservedTime) errors.push(required("series.lastObservedTime"));
  }
  for (const f of ["deprecatedCount", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"] as const) {
    if (ev[f]) errors.push(invalid(f, "", "needs to be unset"));
  }
  if (ev.deprecatedSource?.component || ev.deprecatedSource?.host) errors.push(invalid("deprecatedSource", "", "needs to be unset"));
  return errors;
}

const strategy = buildStrategy({
  schema,
  validate: validateEvent,
  validateUpdate: (next, previous) => immutableFields(next, previous, IMMUTABLE),
});

/** Cells as upstream's event printer, wide columns included (kubectl hides them without -o wide). */
export function eventRow(obj: ApiObject, now: Date): unknown[] {
  const ev = obj as Partial<Record<keyof Event, unknown>> & ApiObject;
  const series = isRecord(ev.series) ? ev.series : undefined;
  const regarding = isRecord(ev.regarding) ? ev.regarding : {};
  const source = isRecord(ev.deprecatedSource) ? ev.deprecatedSource : {};
  const first = since(ev.deprecatedFirstTimestamp || ev.eventTime, now);
  const last = series ? since(series.lastObservedTime, now) : ev.deprecatedLastTimestamp ? since(ev.deprecatedLastTimestamp, now) : first;
  const count = series ? series.count : ev.deprecatedCount || 1;
  const kind = text(regarding.kind).toLowerCase();
  const target = regarding.name ? `${kind}/${text(regarding.name)}` : kind;
  const component = text(source.component) || text(ev.reportingController);
  const instance = text(source.host) || text(ev.reportingInstance);
  return [
    last, text(ev.type), text(ev.reason), target, text(regarding.fieldPath), instance ? `${component}, ${instance}` : component,
    text(ev.note).trim(), first, count, obj.metadata.name ?? NONE,
  ];
}

/** events v1 field ↔ core v1 field, for the fields that differ only in name (upstream's conversion). */
const RENAMED = [
  ["regarding", "involvedObject"],
  ["note", "message"],
  ["reportingController", "reportingComponent"],
  ["deprecatedSource", "source"],
  ["deprecatedFirstTimestamp", "firstTimestamp"],
  ["deprecatedLastTimestamp", "lastTimestamp"],
  ["deprecatedCount", "count"],
] as const;
const SAME_NAME = ["eventTime", "series", "action", "related", "type", "reason", "reportingInstance"] as const;

function convert(from: ApiObject, apiVersion: string, pairs: readonly (readonly [string, string])[]): ApiObject {
  const out: ApiObject = { apiVersion, kind: EVENT_KIND, metadata: from.metadata };
  for (const [a, b] of pairs) if (from[a] !== undefined && from[a] !== null) out[b] = from[a];
  return out;
}

/** The core v1 form of a stored (events v1) Event. */
export function eventToCore(ev: ApiObject): CoreEvent {
  return convert(ev, "v1", [...RENAMED, ...SAME_NAME.map((f) => [f, f] as const)]) as CoreEvent;
}

/** The events v1 form of a core v1 Event: what is stored. */
export function coreToEvent(core: ApiObject, names: GroupNames): Event {
  const pairs = [...RENAMED.map(([a, b]) => [b, a] as const), ...SAME_NAME.map((f) => [f, f] as const)];
  return convert(core, `${names.events}/${EVENT_VERSION}`, pairs) as Event;
}

/** Core v1 Events are kept as events v1 objects: the storage keys and conversions of that view. */
export function coreEventStorageView(names: GroupNames): StorageView {
  return {
    viewPrefix: collectionPrefix("", "events"),
    storedPrefix: collectionPrefix(names.events, "events"),
    toStored: (text) => serializeForStorage(coreToEvent(JSON.parse(text) as ApiObject, names)),
    fromStored: (text) => serializeForStorage(eventToCore(JSON.parse(text) as ApiObject)),
  };
}

type Reference = Partial<Record<"kind" | "namespace" | "name" | "uid" | "apiVersion" | "resourceVersion" | "fieldPath", string>>;

/** `<prefix>.kind`, `.namespace`, `.name`, `.uid`, `.apiVersion`, `.resourceVersion`, `.fieldPath` field selectors. */
export function referenceSelectors(prefix: string, ref: (obj: ApiObject) => Reference | undefined): Record<string, (obj: ApiObject) => string | undefined> {
  const fields = ["kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"] as const;
  return Object.fromEntries(fields.map((f) => [`${prefix}.${f}`, (obj: ApiObject) => ref(obj)?.[f] ?? ""]));
}

export function eventDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.events,
    version: EVENT_VERSION,
    kind: EVENT_KIND,
    plural: "events",
    shortNames: ["ev"],
    namespaced: true,
    nameRule: "dns-subdomain",
    columns: [
      column("Last Seen", "Time of the last occurrence."),
      column("Type", "Normal or Warning."),
      column("Reason", "Why the action was taken."),
      column("Object", "The object the event is about."),
      column("Subobject", "Field path within the object.", 1),
      column("Source", "Reporting controller and instance.", 1),
      column("Message", "Human-readable description."),
      column("First Seen", "Time of the first occurrence.", 1),
      column("Count", "Number of occurrences.", 1, "integer"),
      { ...column("Name", "Name of the event.", 1), format: "name" },
    ],
    addAge: false,
    row: eventRow,
    fieldSelectors: {
      ...referenceSelectors("regarding", (obj) => (obj as Event).regarding),
      reason: (obj) => (obj as Event).reason,
      reportingController: (obj) => (obj as Event).reportingController,
      type: (obj) => (obj as Event).type,
    },
    expiresWithEventTtl: true,
    strategy,
  });
}
