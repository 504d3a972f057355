// Field schema → OpenAPI schemas: one definition per kind and per named object type, `$ref`s between them, upstream's extensions.
import { SHARED_TYPE_NAMES, type ObjectNode, type SchemaNode, type TypePackage } from "../../api/schema.js";

/** Swagger 2.0 (`#/definitions/`, bare `$ref`s) or OpenAPI 3.0 (`#/components/schemas/`, `allOf`-wrapped `$ref`s). */
export type Dialect = "v2" | "v3";

export type OpenApiSchema = Record<string, unknown>;

export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

/**
 * Definition names as upstream spells them: the suffix reversed, then `api.<group's first label>.<version>.<Type>`
 * (`io.k8s.api.certificates.v1.CertificateSigningRequest` under k8s.io, `io.platform.api.certificates.v1...`
 * under platform.io), and `apimachinery.pkg.apis.meta.v1.<Type>` for object and list metadata.
 */
export function definitionPrefix(suffix: string, group: string | TypePackage, version: string): string {
  const root = suffix.split(".").reverse().join(".");
  if (group === "meta") return `${root}.apimachinery.pkg.apis.meta.v1`;
  const pkg = group === "" ? "core" : group.split(".")[0]!;
  return `${root}.api.${pkg}.${version}`;
}

const pascal = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
/** The English singular of a list field's name, for its item type (`conditions`, `containerStatuses`, `policies`). */
function singular(s: string): string {
  if (s.endsWith("ies")) return `${s.slice(0, -3)}y`;
  if (/(ss|us|x|ch|sh)es$/.test(s)) return s.slice(0, -2);
  return s.endsWith("s") && !s.endsWith("ss") ? s.slice(0, -1) : s;
}

/** The definitions of one document, each object type defined once however many places use it. */
export class Definitions {
  readonly schemas: Record<string, OpenApiSchema> = {};
  /** By the `fields` record, which every tagged or described copy of a node shares. */
  readonly #names = new Map<object, string>();

  constructor(
    readonly dialect: Dialect,
    private readonly suffix: string,
  ) {}

  ref(name: string, description?: string): OpenApiSchema {
    const target = `#/${this.dialect === "v2" ? "definitions" : "components/schemas"}/${name}`;
    const d = description ? { description } : {};
    // OpenAPI 3.0 ignores siblings of a `$ref`; upstream wraps it in allOf so the field keeps its own description.
    return this.dialect === "v2" ? { $ref: target, ...d } : { allOf: [{ $ref: target }], ...d };
  }

  /** Defines a kind's root (`name` its full definition name) with its group/version/kind. */
  kind(name: string, root: ObjectNode, gvk: GroupVersionKind): void {
    this.#names.set(root.fields, name);
    const local = name.slice(name.lastIndexOf(".") + 1);
    const prefix = name.slice(0, name.lastIndexOf("."));
    this.schemas[name] = { ...this.#object(root, prefix, local, root.description), "x-kubernetes-group-version-kind": [gvk] };
  }

  /** Defines a list kind (`{Kind}List`) holding items of the definition `itemName`. */
  list(name: string, itemName: string, listMeta: ObjectNode, gvk: GroupVersionKind): void {
    const meta = this.#named(listMeta, "", "ListMeta");
    this.schemas[name] = {
      type: "object",
      description: `A list of ${gvk.kind} objects.`,
      required: ["items"],
      properties: {
        apiVersion: { type: "string", description: "Versioned schema of this representation of the object." },
        kind: { type: "string", description: "REST resource this object represents." },
        metadata: this.ref(meta, "Standard list metadata."),
        items: { type: "array", items: this.ref(itemName), description: `The ${gvk.kind} objects.` },
      },
      "x-kubernetes-group-version-kind": [gvk],
    };
  }

  /** The body of a PATCH, upstream's meta/v1 Patch: its shape depends on the patch type. */
  patchBody(): OpenApiSchema {
    const name = `${definitionPrefix(this.suffix, "meta", "v1")}.Patch`;
    this.schemas[name] ??= { type: "object", description: "A patch: a JSON patch, a merge patch or a strategic merge patch, as the Content-Type says." };
    return this.ref(name);
  }

  /** The schema of `node`; `prefix` and `hint` name the definitions of object types it introduces. */
  convert(node: SchemaNode, prefix: string, hint: string): OpenApiSchema {
    const d = node.description ? { description: node.description } : {};
    switch (node.type) {
      case "object":
        return this.ref(this.#named(node, prefix, hint), node.description);
      case "map":
        return { type: "object", additionalProperties: this.convert(node.values, prefix, `${hint}Value`), ...d };
      case "list":
        return {
          type: "array",
          items: this.convert(node.items, prefix, singular(hint)),
          ...d,
          "x-kubernetes-list-type": node.listType,
          ...(node.mapKeys ? { "x-kubernetes-list-map-keys": [...node.mapKeys] } : {}),
          ...(node.patchStrategy ? { "x-kubernetes-patch-strategy": node.patchStrategy } : {}),
          ...(node.patchMergeKey ? { "x-kubernetes-patch-merge-key": node.patchMergeKey } : {}),
        };
      case "any":
        return { type: "object", "x-kubernetes-preserve-unknown-fields": true, ...d };
      default:
        return { type: node.type, ...(node.format ? { format: node.format } : {}), ...d };
    }
  }

  /** The definition name of an object type, defining it on first use. */
  #named(node: ObjectNode, prefix: string, hint: string): string {
    const known = this.#names.get(node.fields);
    if (known !== undefined) return known;
    const shared = SHARED_TYPE_NAMES.get(node.fields);
    const [at, local] = shared ? [definitionPrefix(this.suffix, shared.pkg, "v1"), shared.name] : [prefix, pascal(hint)];
    let name = `${at}.${local}`;
    // Two different types that path naming would call the same get numbered rather than merged.
    for (let n = 2; Object.hasOwn(this.schemas, name); n++) name = `${at}.${local}${n}`;
    this.#names.set(node.fields, name);
    this.schemas[name] = {}; // reserved before the fields, so a type that contains itself ends in a $ref
    // A nested node's description is of the field using it and goes on the reference: kubectl explain prints both.
    this.schemas[name] = this.#object(node, at, local, undefined);
    return name;
  }

  #object(node: ObjectNode, prefix: string, local: string, description: string | undefined): OpenApiSchema {
    const properties: Record<string, OpenApiSchema> = {};
    for (const [field, child] of Object.entries(node.fields)) properties[field] = this.convert(child, prefix, `${local}${pascal(field)}`);
    return {
      type: "object",
      ...(description ? { description } : {}),
      ...(node.required.length > 0 ? { required: [...node.required] } : {}),
      properties,
      ...(node.preserveUnknown ? { "x-kubernetes-preserve-unknown-fields": true } : {}),
    };
  }
}
