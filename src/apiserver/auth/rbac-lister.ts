// An RbacLister over the API server's storage: lists the four RBAC collections, then follows their watches to stay current.
import type { GroupNames } from "../../api/group.js";
import type { ApiObject } from "../../api/meta.js";
import type { ClusterRole, ClusterRoleBinding, Role, RoleBinding } from "../../api/types/rbac.js";
import { invalidOption } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { systemClock, type Clock } from "../../time/clock.js";
import { FollowerGroup, StorageFollower } from "../storage/follower.js";
import type { Storage, StorageEvent } from "../storage/types.js";
import type { RbacLister } from "./rbac.js";

export interface StorageRbacListerOptions {
  readonly storage: Storage;
  readonly names: GroupNames;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** Wait before listing again after a failed list or a broken watch; default 1000 ms. */
  readonly retryMs?: number;
}

const PLURALS = ["roles", "clusterroles", "rolebindings", "clusterrolebindings"] as const;
type Plural = (typeof PLURALS)[number];

class Collection {
  readonly objects = new Map<string, ApiObject>();
  snapshot: readonly ApiObject[] | undefined;
}

export class StorageRbacLister implements RbacLister {
  readonly #logger: Logger;
  readonly #collections = new Map<Plural, Collection>(PLURALS.map((p) => [p, new Collection()]));
  readonly #followers: FollowerGroup;
  #version = 0;

  constructor(options: StorageRbacListerOptions) {
    if (!options?.storage) throw invalidOption("storage", "to be a Storage", options?.storage);
    if (!options.names) throw invalidOption("names", "to be GroupNames", options.names);
    const retryMs = options.retryMs ?? 1000;
    if (!Number.isInteger(retryMs) || retryMs < 1) throw invalidOption("retryMs", "to be an integer ≥ 1", retryMs);
    this.#logger = options.logger ?? silentLogger();
    const clock = options.clock ?? systemClock;
    this.#followers = new FollowerGroup(PLURALS.map((plural) => {
      const c = this.#collections.get(plural)!;
      return new StorageFollower({
        storage: options.storage,
        // The storage key layout `/<group>/<resource>/...` is part of the Storage contract.
        prefix: `/${options.names.rbac}/${plural}/`,
        clock,
        retryMs,
        reset: (items) => {
          c.objects.clear();
          for (const kv of items) this.#put(c, kv.key, kv.value);
          this.#changed(c);
        },
        apply: (event) => this.#apply(c, event),
        broken: (err) => this.#logger.warn({ resource: plural, err }, "RBAC cache lost its watch; listing again"),
      });
    }));
  }

  /** Lists every collection (resolves once all four are loaded; rejects when a first list fails), then keeps them current. */
  async start(signal?: AbortSignal): Promise<void> {
    await this.#followers.start(signal);
  }

  stop(): void {
    this.#followers.stop();
  }

  version(): number {
    return this.#version;
  }

  roles(): readonly Role[] {
    return this.#list("roles") as Role[];
  }

  clusterRoles(): readonly ClusterRole[] {
    return this.#list("clusterroles") as ClusterRole[];
  }

  roleBindings(): readonly RoleBinding[] {
    return this.#list("rolebindings") as RoleBinding[];
  }

  clusterRoleBindings(): readonly ClusterRoleBinding[] {
    return this.#list("clusterrolebindings") as ClusterRoleBinding[];
  }

  #list(plural: Plural): readonly ApiObject[] {
    const c = this.#collections.get(plural)!;
    c.snapshot ??= [...c.objects.values()];
    return c.snapshot;
  }

  #changed(c: Collection): void {
    c.snapshot = undefined;
    this.#version++;
  }

  #apply(c: Collection, event: StorageEvent): void {
    if (event.type === "DELETE") c.objects.delete(event.key);
    else this.#put(c, event.key, event.kv.value);
    this.#changed(c);
  }

  #put(c: Collection, key: string, value: string): void {
    try {
      c.objects.set(key, JSON.parse(value) as ApiObject);
    } catch (err) {
      this.#logger.error({ key, err }, "stored RBAC object is not JSON; ignored");
    }
  }
}
