// Event (events group, v1): a report of something that happened to an object, optionally one of a series.
import type { ApiObject, ApiList } from "../meta.js";
import type { ObjectReference } from "./core.js";

export const EVENT_KIND = "Event";
export const EVENT_VERSION = "v1";

/** The seed's limits on a new event: reason, action and the other short fields in characters, the note in bytes. */
export const EVENT_FIELD_LIMIT = 128;
export const EVENT_NOTE_LIMIT_BYTES = 1024;

export type EventType = "Normal" | "Warning";
export const EVENT_TYPES: readonly EventType[] = ["Normal", "Warning"];

export interface EventSeries {
  count: number;
  /** MicroTime of the last occurrence counted. */
  lastObservedTime: string;
}

export interface EventSource {
  component?: string;
  host?: string;
}

export interface Event extends ApiObject {
  /** MicroTime (RFC 3339 with microseconds) the event was first observed. */
  eventTime: string;
  action?: string;
  reason?: string;
  note?: string;
  type?: EventType;
  regarding?: ObjectReference;
  related?: ObjectReference;
  reportingController?: string;
  reportingInstance?: string;
  series?: EventSeries;
  deprecatedCount?: number;
  deprecatedFirstTimestamp?: string;
  deprecatedLastTimestamp?: string;
  deprecatedSource?: EventSource;
}

export type EventList = ApiList<Event>;

/** The core v1 view of an Event (upstream's older shape of the same stored object). */
export interface CoreEvent extends ApiObject {
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  source?: EventSource;
  firstTimestamp?: string;
  lastTimestamp?: string;
  count?: number;
  type?: string;
  eventTime?: string;
  series?: EventSeries;
  action?: string;
  related?: ObjectReference;
  reportingComponent?: string;
  reportingInstance?: string;
}
