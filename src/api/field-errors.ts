// Field errors as the API reports them (upstream's field.Error): the reasons and the one wording of each message.

/** One field-level validation failure; becomes a Status `details.causes` entry. */
export interface FieldError {
  /** JSON path like `spec.expirationSeconds` or `status.conditions[1].type`. */
  readonly field: string;
  readonly message: string;
  readonly reason: "FieldValueRequired" | "FieldValueInvalid" | "FieldValueForbidden" | "FieldValueDuplicate" | "FieldValueNotSupported" | "FieldValueTooLong" | "FieldValueTypeInvalid";
}

// --- message bodies as upstream's field.Error.ErrorBody ---

const MAX_SHOWN = 128;

/** A value as error messages show it: strings quoted, long values cut. */
export function show(value: unknown): string {
  let text: string;
  if (typeof value === "string") text = JSON.stringify(value);
  else if (value === undefined) text = "null";
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}...` : text;
}

const withDetail = (head: string, detail?: string): string => (detail ? `${head}: ${detail}` : head);

export function required(field: string, detail?: string): FieldError {
  return { field, reason: "FieldValueRequired", message: withDetail("Required value", detail) };
}

export function invalid(field: string, value: unknown, detail: string): FieldError {
  return { field, reason: "FieldValueInvalid", message: `Invalid value: ${show(value)}: ${detail}` };
}

export function forbidden(field: string, detail: string): FieldError {
  return { field, reason: "FieldValueForbidden", message: `Forbidden: ${detail}` };
}

export function duplicate(field: string, value: unknown): FieldError {
  return { field, reason: "FieldValueDuplicate", message: `Duplicate value: ${show(value)}` };
}

export function notSupported(field: string, value: unknown, supported: readonly string[]): FieldError {
  const list = supported.map((s) => JSON.stringify(s)).join(", ");
  return { field, reason: "FieldValueNotSupported", message: `Unsupported value: ${show(value)}: supported values: ${list}` };
}

export function tooLong(field: string, max: number, unit = "bytes"): FieldError {
  return { field, reason: "FieldValueTooLong", message: `Too long: may not be more than ${max} ${unit}` };
}

export function typeInvalid(field: string, value: unknown, type: string): FieldError {
  return { field, reason: "FieldValueTypeInvalid", message: `Invalid value: ${show(value)}: must be of type ${type}` };
}

/** The one message of every immutability rule. */
export function immutable(field: string, value: unknown): FieldError {
  return invalid(field, value, "field is immutable");
}
