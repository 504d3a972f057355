// Event (core v1, namespaced): the older view of the stored events v1 objects, with upstream's lenient legacy rules.
import { Buffer } from "node:buffer";
import type { ApiObject } from "../../../api/meta.js";
import type { GroupNames } from "../../../api/group.js";
import { kindSchema } from "../../../api/schema.js";
import { EVENT_KIND, type CoreEvent } from "../../../api/types/event.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { invalid, required, validateQualifiedName } from "../validation.js";
import { EVENT_FIELD_LIMIT, EVENT_NOTE_LIMIT_BYTES } from "../../../api/types/event.js";
import { coreEventStorageView, coreToEvent, eventDefinition, eventRow, referenceSelectors } from "./event.js";
import { buildStrategy, defineResource } from "./strategy-kit.js";

function tooLong(field: string, value: string | undefined): FieldError[] {
  return value !== undefined && value.length > EVENT_FIELD_LIMIT ? [invalid(field, "", `can have at most ${EVENT_FIELD_LIMIT} characters`)] : [];
}

/**
 * Upstream's legacy validation, as for a core v1 request: an event without eventTime (an old-style one) only needs
 * its namespace to agree with the involved object's; one with eventTime needs the reporting fields too.
 * Updates are free, as upstream's core v1 updates are (recorders bump count and lastTimestamp).
 */
function validateCoreEvent(obj: ApiObject): FieldError[] {
  const ev = obj as CoreEvent;
  const errors: FieldError[] = [];
  const ns = ev.metadata.namespace ?? "";
  const involvedNs = ev.involvedObject?.namespace ?? "";
  const mismatch = () => invalid("involvedObject.namespace", involvedNs, "does not match event.namespace");
  if (!ev.eventTime) {
    if (involvedNs === "" ? ns !== "" && ns !== "default" : ns !== involvedNs) errors.push(mismatch());
    return errors;
  }
  if (involvedNs === "" && ns !== "default" && ns !== "kube-system") errors.push(mismatch());
  if (!ev.reportingComponent) errors.push(required("reportingComponent"));
  else errors.push(...validateQualifiedName("reportingComponent", ev.reportingComponent));
  if (!ev.reportingInstance) errors.push(required("reportingInstance"));
  if (!ev.action) errors.push(required("action"));
  if (!ev.reason) errors.push(required("reason"));
  errors.push(...tooLong("reportingInstance", ev.reportingInstance), ...tooLong("action", ev.action), ...tooLong("reason", ev.reason));
  if (ev.message !== undefined && Buffer.byteLength(ev.message) > EVENT_NOTE_LIMIT_BYTES) {
    errors.push(invalid("message", "", `can have at most ${EVENT_NOTE_LIMIT_BYTES} bytes`));
  }
  return errors;
}

const strategy = buildStrategy({ schema: kindSchema(EVENT_KIND, "core"), validate: validateCoreEvent });

export function coreEventDefinition(names: GroupNames): ResourceDefinition {
  const events = eventDefinition(names);
  return defineResource({
    group: "",
    version: "v1",
    kind: EVENT_KIND,
    plural: "events",
    shortNames: ["ev"],
    namespaced: true,
    nameRule: "dns-subdomain",
    columns: events.columns,
    addAge: false,
    row: (obj, now) => eventRow(coreToEvent(obj, names), now),
    // Upstream's selectable fields of core Events.
    fieldSelectors: {
      ...referenceSelectors("involvedObject", (obj) => (obj as CoreEvent).involvedObject),
      reason: (obj) => (obj as CoreEvent).reason,
      reportingComponent: (obj) => (obj as CoreEvent).reportingComponent,
      source: (obj) => (obj as CoreEvent).source?.component,
      type: (obj) => (obj as CoreEvent).type,
    },
    storedAs: coreEventStorageView(names),
    expiresWithEventTtl: true,
    strategy,
  });
}
