// CertificateSigningRequest: definition, main strategy, and the /approval, /status and /revocation subresources (seed 000 §2–§3).
import type { ApiObject } from "../../../api/meta.js";
import type { GroupNames } from "../../../api/group.js";
import { CSR_KIND, CSR_VERSION } from "../../../api/types/csr.js";
import { csrConditionSummary, TERMINAL_CONDITION_TYPES } from "../../../api/conditions.js";
import { kindSchema, type ObjectNode } from "../../../api/schema.js";
import type { FieldError, ResourceDefinition, StrategyContext, SubresourceStrategy } from "../strategy.js";
import { dropNulls, ownFields, typeErrors } from "../type-check.js";
import { buildStrategy, isRecord, immutableFields, keepAllBut, specChanged, defineResource, SUBRESOURCE_VERBS } from "./strategy-kit.js";
import { column, ageColumn, humanDuration, nameColumn, NONE, orNone, since, text } from "./printing.js";
import {
  checkRequestAhead,
  populateConditionTimestamps,
  preserveConditions,
  validateCertificate,
  validateConditions,
  validateSpec,
  validateTransition,
  view,
  type TransitionRules,
} from "./csr-rules.js";
import { recordRevokedSerial, validateRevocation } from "./csr-revocation.js";
import { copyPlain } from "../../../plain-data.js";

const schema = kindSchema(CSR_KIND);
const ownSchema = ownFields(schema);

/** The whole spec is fixed at creation (seed 000 §2), field by field so each change is named. */
const IMMUTABLE_SPEC = Object.keys((schema.fields.spec as ObjectNode).fields).map((f) => `spec.${f}`);

/** Sets the requester fields from the authenticated user; whatever the client sent there is dropped. */
function setRequester(obj: ApiObject, ctx: StrategyContext): void {
  const spec = obj.spec;
  if (!isRecord(spec)) return;
  for (const f of ["username", "uid", "groups", "extra"]) delete spec[f];
  const user = ctx.user;
  if (!user) return;
  spec.username = user.username;
  if (user.uid) spec.uid = user.uid;
  if (user.groups?.length) spec.groups = [...user.groups];
  if (user.extra && Object.keys(user.extra).length > 0) spec.extra = copyPlain(user.extra);
}

const statusRules = (obj: ApiObject) => [...validateConditions(view(obj).status?.conditions ?? []), ...validateCertificate(obj)];

/** A subresource that may change conditions (and for /status the certificate), everything else kept from storage. */
function conditionSubresource(
  prepare: (next: ApiObject, previous: ApiObject) => void,
  rules: TransitionRules,
  extraRules: (next: ApiObject, previous: ApiObject) => FieldError[] = () => [],
): SubresourceStrategy {
  return {
    verbs: SUBRESOURCE_VERBS,
    prepareForUpdate(next, previous, ctx) {
      prepare(next, previous);
      dropNulls(next, ownSchema);
      for (const type of TERMINAL_CONDITION_TYPES) if (!rules.mayAdd.includes(type)) preserveConditions(next, previous, type);
      populateConditionTimestamps(next, previous, ctx.now);
    },
    validateUpdate(next, previous) {
      const errors = typeErrors(next, ownSchema);
      return errors.length > 0 ? errors : [...extraRules(next, previous), ...statusRules(next), ...validateTransition(next, previous, rules)];
    },
  };
}

/** Keeps everything from storage but status.conditions (the /approval and /revocation writes). */
function keepAllButConditions(next: ApiObject, previous: ApiObject): void {
  const status = next.status;
  keepAllBut(next, previous, []);
  if (isRecord(status)) {
    const kept = isRecord(previous.status) ? copyPlain(previous.status) : {};
    if (status.conditions === undefined) delete kept.conditions;
    else kept.conditions = status.conditions;
    next.status = kept;
  } else if (status !== undefined) next.status = status; // left for the type check to refuse
}

/** `/approval`: only status.conditions change; Approved and Denied may be added, Failed and Revoked not. */
const approval = conditionSubresource(keepAllButConditions, { mayAdd: ["Approved", "Denied"], maySetCertificate: false });

/**
 * `/revocation`: only status.conditions change; Revoked may be added, once, with an RFC 5280 reason, to a request
 * whose certificate was issued (docs/revocation.md). The `revoke` verb on the signer is checked by admission.
 */
const revocation = conditionSubresource(
  (next, previous) => {
    keepAllButConditions(next, previous);
    recordRevokedSerial(next, previous);
  },
  { mayAdd: ["Revoked"], maySetCertificate: false },
  validateRevocation,
);

/** `/status`: conditions and the certificate change, the spec is kept; Failed may be added, Approved and Denied not. */
const status = conditionSubresource((next, previous) => keepAllBut(next, previous, ["status"]), { mayAdd: ["Failed"], maySetCertificate: true });

const strategy = buildStrategy({
  schema,
  checkAhead: checkRequestAhead,
  prepareForCreate(obj, ctx) {
    setRequester(obj, ctx);
    // Be explicit that a request cannot be created approved or issued.
    obj.status = {};
  },
  validate(obj, ctx) {
    return [...validateSpec(obj, ctx.names), ...statusRules(obj)];
  },
  prepareForUpdate(next, previous) {
    if (previous.status === undefined) delete next.status;
    else next.status = copyPlain(previous.status);
  },
  validateUpdate(next, previous) {
    return [...immutableFields(next, previous, IMMUTABLE_SPEC), ...validateTransition(next, previous, { mayAdd: [], maySetCertificate: false })];
  },
  specChanged,
  subresources: { approval, status, revocation },
});

function row(obj: ApiObject, now: Date): unknown[] {
  const { spec } = view(obj);
  const seconds = spec?.expirationSeconds;
  return [
    obj.metadata.name,
    since(obj.metadata.creationTimestamp, now),
    orNone(spec?.signerName),
    text(spec?.username),
    typeof seconds === "number" ? humanDuration(seconds) : NONE,
    csrConditionSummary(view(obj)),
  ];
}

export function csrDefinition(names: GroupNames): ResourceDefinition {
  return defineResource({
    group: names.certificates,
    version: CSR_VERSION,
    kind: CSR_KIND,
    plural: "certificatesigningrequests",
    shortNames: ["csr"],
    namespaced: false,
    nameRule: "path-segment",
    fieldSelectors: { "spec.signerName": (obj) => view(obj).spec?.signerName },
    columns: [
      nameColumn,
      ageColumn,
      column("SignerName", "Name of the signer asked to issue the certificate."),
      column("Requestor", "Name of the user which submitted the request."),
      column("RequestedDuration", "Requested certificate lifetime (spec.expirationSeconds)."),
      column("Condition", "Approval and issuance state of the request."),
    ],
    row,
    strategy,
  });
}
