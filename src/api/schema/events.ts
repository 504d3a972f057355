// Field schemas of the two Event kinds: events/v1 (what is stored) and core v1 (the older view of the same objects).
import * as s from "./nodes.js";
import { kind, objectReference, type KindSchemaDefinition } from "./shared.js";

const series = (description: string) =>
  s.object(
    { count: s.tag(1, s.int32("Occurrences of the series up to the last heartbeat.")), lastObservedTime: s.tag(2, s.time("Time of the last occurrence.")) },
    { required: ["count", "lastObservedTime"], description },
  );

const source = (description: string) =>
  s.object({ component: s.tag(1, s.string("Component reporting the event.")), host: s.tag(2, s.string("Node name the event was generated on.")) }, { description });

const DEPRECATED = "Deprecated; for compatibility with core events.";

export const EVENT_KINDS: readonly KindSchemaDefinition[] = [
  kind(
    "events",
    "Event",
    {
      eventTime: s.time("Time the event was first observed."),
      series: series("Data of an event series; absent for a single event."),
      action: s.string("Machine-readable action taken or failed; at most 128 characters."),
      reason: s.string("Why the action was taken; at most 128 characters."),
      note: s.string("Human-readable description of the action status; at most 1 kB."),
      type: s.string("Normal or Warning."),
      regarding: s.describe(objectReference, "The object the event is about."),
      related: s.describe(objectReference, "An optional secondary object."),
      reportingController: s.string("Name of the controller that emitted the event."),
      reportingInstance: s.string("ID of the controller instance; at most 128 characters."),
      deprecatedCount: s.int32(DEPRECATED),
      deprecatedFirstTimestamp: s.time(DEPRECATED),
      deprecatedLastTimestamp: s.time(DEPRECATED),
      deprecatedSource: source(DEPRECATED),
    },
    { required: ["eventTime"], description: "An event about an object, reported by a controller; read with kubectl events." },
  ),
  // Field numbers as upstream's core v1 Event message.
  kind(
    "core",
    "Event",
    {
      involvedObject: s.tag(2, s.describe(objectReference, "The object this event is about.")),
      reason: s.tag(3, s.string("Short, machine-readable reason for the transition.")),
      message: s.tag(4, s.string("Human-readable description of the status of this operation.")),
      source: s.tag(5, source("The component reporting this event.")),
      firstTimestamp: s.tag(6, s.time("Time the event was first recorded.")),
      lastTimestamp: s.tag(7, s.time("Time of the most recent occurrence.")),
      count: s.tag(8, s.int32("Number of times this event has occurred.")),
      type: s.tag(9, s.string("Normal or Warning.")),
      eventTime: s.tag(10, s.time("Time the event was first observed (MicroTime).")),
      series: s.tag(11, series("Data of an event series; absent for a single event.")),
      action: s.tag(12, s.string("What action was taken or failed regarding the involved object.")),
      related: s.tag(13, s.describe(objectReference, "An optional secondary object.")),
      reportingComponent: s.tag(14, s.string("Name of the controller that emitted the event.")),
      reportingInstance: s.tag(15, s.string("ID of the controller instance.")),
    },
    { required: ["involvedObject"], description: "An event about an object, the core view of events." },
  ),
];
