// ServiceAccount (core v1, namespaced): definition and strategy; deletes answer with the object, tokens come from the `token` action.
import type { ApiObject } from "../../../api/meta.js";
import { kindSchema } from "../../../api/schema.js";
import { CORE_VERSION } from "../../../api/types/core.js";
import { SERVICE_ACCOUNT_KIND, type ServiceAccount } from "../../../api/types/service-account.js";
import type { FieldError, ResourceDefinition } from "../strategy.js";
import { index, required } from "../validation.js";
import { buildStrategy, defineResource } from "./strategy-kit.js";
import { ageColumn, column, nameColumn, since } from "./printing.js";

/** Every entry of a reference list names its object. */
function namedEntries(list: readonly { name?: string }[] | undefined, path: string): FieldError[] {
  return (list ?? []).flatMap((ref, i) => (ref.name ? [] : [required(`${index(path, i)}.name`)]));
}

const strategy = buildStrategy({
  schema: kindSchema(SERVICE_ACCOUNT_KIND),
  validate(obj) {
    const sa = obj as ServiceAccount;
    return [...namedEntries(sa.secrets, "secrets"), ...namedEntries(sa.imagePullSecrets, "imagePullSecrets")];
  },
});

const row = (obj: ApiObject, now: Date): unknown[] => [
  obj.metadata.name,
  Array.isArray(obj.secrets) ? obj.secrets.length : 0,
  since(obj.metadata.creationTimestamp, now),
];

export function serviceAccountDefinition(): ResourceDefinition {
  return defineResource({
    group: "",
    version: CORE_VERSION,
    kind: SERVICE_ACCOUNT_KIND,
    plural: "serviceaccounts",
    shortNames: ["sa"],
    namespaced: true,
    nameRule: "dns-subdomain",
    deleteReturnsObject: true,
    actions: ["token"],
    columns: [nameColumn, column("Secrets", "Number of listed Secrets.", 0, "integer"), ageColumn],
    row,
    strategy,
  });
}
