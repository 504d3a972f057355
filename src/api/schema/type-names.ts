// Upstream's names for the shared object types of the field schema, so published schemas name them as upstream does.
import type { ObjectNode } from "./nodes.js";
import { labelSelector, listMeta, localObjectReference, objectMeta, objectReference, userInfo } from "./shared.js";

/** The package a shared type lives in upstream: apimachinery's meta/v1, or the v1 API of a group. */
export type TypePackage = "meta" | "core" | "authentication";

export interface SharedTypeName {
  readonly name: string;
  readonly pkg: TypePackage;
}

const itemsOf = (node: ObjectNode, field: string): ObjectNode => {
  const list = node.fields[field];
  if (list?.type !== "list" || list.items.type !== "object") throw new Error(`${field} is not a list of objects`);
  return list.items;
};

/**
 * Keyed by the `fields` record, which `tag` and `describe` copies of a node share, so every use of a shared type
 * resolves to the one name.
 */
export const SHARED_TYPE_NAMES: ReadonlyMap<object, SharedTypeName> = new Map<object, SharedTypeName>([
  [objectMeta.fields, { name: "ObjectMeta", pkg: "meta" }],
  [itemsOf(objectMeta, "ownerReferences").fields, { name: "OwnerReference", pkg: "meta" }],
  [itemsOf(objectMeta, "managedFields").fields, { name: "ManagedFieldsEntry", pkg: "meta" }],
  [listMeta.fields, { name: "ListMeta", pkg: "meta" }],
  [labelSelector.fields, { name: "LabelSelector", pkg: "meta" }],
  [itemsOf(labelSelector, "matchExpressions").fields, { name: "LabelSelectorRequirement", pkg: "meta" }],
  [objectReference.fields, { name: "ObjectReference", pkg: "core" }],
  [localObjectReference.fields, { name: "LocalObjectReference", pkg: "core" }],
  [userInfo.fields, { name: "UserInfo", pkg: "authentication" }],
]);
