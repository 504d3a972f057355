// Adapters from the API server's registry to what the identity layer consumes: object lookups and bootstrap writes.
import type { ApiObject, UserInfo } from "../../api/meta.js";
import { decodedData } from "../../api/base64-text.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import type { ResourceStore } from "../registry/generic.js";
import type { Registry } from "../registry/registry.js";
import type { BootstrapWriter } from "./bootstrap-policy.js";
import { SYSTEM_MASTERS } from "./identity.js";
import type { FoundObject, ObjectLookup, TokenLookups } from "./service-account-tokens.js";

/** The identity of the server's own bootstrap writes. */
const SERVER_USER: UserInfo = { username: "system:apiserver", groups: [SYSTEM_MASTERS] };

function storeOf(registry: Registry, group: string, plural: string): ResourceStore | undefined {
  const def = registry.catalog.definition(group, "v1", plural);
  return def ? registry.store(def) : undefined;
}

function lookup(registry: Registry, plural: "serviceaccounts" | "pods" | "secrets"): ObjectLookup {
  let store: ResourceStore | undefined;
  return async (namespace, name): Promise<FoundObject | undefined> => {
    store ??= storeOf(registry, "", plural);
    if (!store) return undefined;
    try {
      const obj = (await store.get(namespace, name)).object;
      const spec = obj.spec as { serviceAccountName?: unknown } | undefined;
      return {
        ...(obj.metadata.uid && { uid: obj.metadata.uid }),
        ...(obj.metadata.deletionTimestamp && { deleting: true }),
        ...(obj.metadata.labels && { labels: obj.metadata.labels }),
        ...(plural === "secrets" && { ...(typeof obj.type === "string" && { type: obj.type }), data: decodedData(obj.data) }),
        ...(plural === "pods" && typeof spec?.serviceAccountName === "string" && { serviceAccountName: spec.serviceAccountName }),
        ...(plural === "serviceaccounts" && Array.isArray(obj.secrets) && { secretNames: (obj.secrets as { name?: unknown }[]).map((r) => r?.name).filter((n): n is string => typeof n === "string") }),
      };
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND")) return undefined;
      throw err;
    }
  };
}

/** A label set on a Secret as the server itself (audited as its `legacy token tracking`), if the Secret keeps `uid`. */
function secretLabeller(registry: Registry): NonNullable<TokenLookups["labelSecret"]> {
  return async (namespace, name, uid, label, value) => {
    const store = storeOf(registry, "", "secrets");
    if (!store) return;
    const labelled = (current: ApiObject): ApiObject => {
      if (current.metadata.uid !== uid) throw new PlatformError("CONFLICT", `secrets "${name}" is another Secret now (uid ${current.metadata.uid ?? ""})`);
      current.metadata.labels = { ...current.metadata.labels, [label]: value };
      return current;
    };
    await registry.audit({ verb: "patch", def: store.def, namespace, name, user: SERVER_USER, component: "legacy token tracking" }, () =>
      store.patch(namespace, name, labelled, { fieldManager: "platform-ca-apiserver", user: SERVER_USER }),
    );
  };
}

/**
 * ServiceAccount, Pod and Secret lookups that read the registry's storage (a deleted object is seen at once; the token
 * success cache, token-cache.ts, forgets what it remembered of one as it changes),
 * and the Secret label a token Secret's use sets.
 */
export function registryLookups(registry: Registry): TokenLookups {
  return { serviceAccount: lookup(registry, "serviceaccounts"), pod: lookup(registry, "pods"), secret: lookup(registry, "secrets"), labelSecret: secretLabeller(registry) };
}

/** A Namespace's labels (undefined when it does not exist), for the admission webhooks' namespaceSelector. */
export function namespaceLabelsLookup(registry: Registry): (namespace: string) => Promise<Readonly<Record<string, string>> | undefined> {
  return async (namespace) => {
    const store = storeOf(registry, "", "namespaces");
    if (!store) return undefined;
    try {
      return (await store.get(undefined, namespace)).object.metadata.labels ?? {};
    } catch (err) {
      if (isPlatformError(err, "NOT_FOUND")) return undefined;
      throw err;
    }
  };
}

/** Writes bootstrap RBAC objects through the registry (validation and admission included) as the server itself. */
export function registryBootstrapWriter(registry: Registry): BootstrapWriter {
  const rbacStore = (obj: ApiObject): ResourceStore => {
    const store = storeOf(registry, registry.names.rbac, `${obj.kind.toLowerCase()}s`);
    if (!store) throw new PlatformError("NOT_FOUND", `${obj.kind} is not served, so the bootstrap policy cannot be written`);
    return store;
  };
  const opts = { fieldManager: "platform-ca-apiserver", user: SERVER_USER };
  return {
    create: (obj) => rbacStore(obj).create(obj.metadata.namespace, obj, opts),
    modify: (obj, change) => rbacStore(obj).patch(obj.metadata.namespace, obj.metadata.name!, change, opts),
  };
}
