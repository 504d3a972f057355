// What the server serves and how it says so: /version, /api, /apis, /apis/{group}, and APIResourceLists per group/version.
import type { GroupNames } from "../api/group.js";
import { VERSION } from "../version.js";
import type { ResourceDefinition } from "./registry/strategy.js";
import type { ServedApis } from "./http/routes.js";

/** The API level we speak, as kubectl reads it from /version (it only warns past one minor of skew). */
export const API_LEVEL = { major: "1", minor: "32" } as const;

interface GroupVersionRef {
  groupVersion: string;
  version: string;
}

export interface ApiResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  group?: string;
  version?: string;
  shortNames?: string[];
  categories?: string[];
}

/** Action subresources are not stored objects: their request kind is a protocol fact of each action. */
export const ACTION_KINDS: Readonly<Record<string, (names: GroupNames) => { group: string; version: string; kind: string }>> = {
  token: (names) => ({ group: names.authentication, version: "v1", kind: "TokenRequest" }),
};

/** Upstream's version order: GA before beta before alpha, higher numbers first. */
export function compareVersions(a: string, b: string): number {
  const rank = (v: string): [number, number, number] => {
    const m = /^v(\d+)(?:(beta|alpha)(\d+))?$/.exec(v);
    if (!m) return [3, 0, 0];
    return [m[2] === undefined ? 0 : m[2] === "beta" ? 1 : 2, -Number(m[1]), -Number(m[3] ?? 0)];
  };
  const [x, y] = [rank(a), rank(b)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || a.localeCompare(b);
}

export class ApiCatalog implements ServedApis {
  readonly #byPath = new Map<string, ResourceDefinition>();
  readonly #versions = new Map<string, string[]>();
  readonly #groupOrder: string[] = [];

  constructor(
    readonly definitions: readonly ResourceDefinition[],
    readonly names: GroupNames,
  ) {
    for (const def of definitions) {
      this.#byPath.set(`${def.group}/${def.version}/${def.plural}`, def);
      const versions = this.#versions.get(def.group) ?? [];
      if (versions.length === 0) {
        this.#versions.set(def.group, versions);
        if (def.group !== "") this.#groupOrder.push(def.group);
      }
      if (!versions.includes(def.version)) versions.push(def.version);
    }
    for (const v of this.#versions.values()) v.sort(compareVersions);
  }

  definition(group: string, version: string, plural: string): ResourceDefinition | undefined {
    return this.#byPath.get(`${group}/${version}/${plural}`);
  }

  hasGroup(group: string): boolean {
    return group !== "" && this.#versions.has(group);
  }

  /** The served versions of `group`, preferred first. */
  versionsOf(group: string): readonly string[] {
    return this.#versions.get(group) ?? [];
  }

  hasVersion(group: string, version: string): boolean {
    return this.#versions.get(group)?.includes(version) ?? false;
  }

  version(): Record<string, string> {
    return {
      major: API_LEVEL.major,
      minor: API_LEVEL.minor,
      gitVersion: `v${API_LEVEL.major}.${API_LEVEL.minor}.0-platform-ca`,
      gitCommit: "",
      gitTreeState: "clean",
      buildDate: "",
      goVersion: `node${process.versions.node}`,
      compiler: "platform-ca",
      platform: `${process.platform}/${process.arch}`,
      platformCaVersion: VERSION,
    };
  }

  apiVersions(serverAddress: string) {
    return { kind: "APIVersions", versions: ["v1"], serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }] };
  }

  apiGroup(group: string) {
    const versions: GroupVersionRef[] = (this.#versions.get(group) ?? []).map((version) => ({ groupVersion: `${group}/${version}`, version }));
    return { kind: "APIGroup", apiVersion: "v1", name: group, versions, preferredVersion: versions[0] };
  }

  apiGroupList() {
    return { kind: "APIGroupList", apiVersion: "v1", groups: this.#groupOrder.map((g) => this.apiGroup(g)) };
  }

  resourceList(group: string, version: string) {
    const resources: ApiResource[] = [];
    for (const def of this.definitions) {
      if (def.group !== group || def.version !== version) continue;
      resources.push(mainResource(def));
      for (const [sub, strategy] of Object.entries(def.strategy.subresources ?? {})) {
        resources.push({ name: `${def.plural}/${sub}`, singularName: "", namespaced: def.namespaced, kind: def.kind, verbs: [...strategy.verbs] });
      }
      for (const action of def.actions ?? []) {
        const known = ACTION_KINDS[action]?.(this.names);
        resources.push({ name: `${def.plural}/${action}`, singularName: "", namespaced: def.namespaced, kind: known?.kind ?? def.kind, verbs: ["create"], ...(known ? { group: known.group, version: known.version } : {}) });
      }
    }
    return { kind: "APIResourceList", apiVersion: "v1", groupVersion: group ? `${group}/${version}` : version, resources };
  }
}

function mainResource(def: ResourceDefinition): ApiResource {
  return {
    name: def.plural,
    singularName: def.singular,
    namespaced: def.namespaced,
    kind: def.kind,
    verbs: def.createOnly ? ["create"] : [...def.verbs],
    ...(def.shortNames?.length ? { shortNames: [...def.shortNames] } : {}),
    ...(def.categories?.length ? { categories: [...def.categories] } : {}),
  };
}
