// Resource type names through the server's discovery documents (csr, plural, singular, kind, kind.group), cached on disk.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { RestClient } from "../../client/index.js";
import { PlatformError } from "../../errors.js";

export interface ResourceInfo {
  readonly group: string;
  readonly version: string;
  /** The group's preferred version is listed first; other versions come after. */
  readonly preferred: boolean;
  readonly plural: string;
  readonly singular: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
  readonly shortNames: readonly string[];
  readonly categories: readonly string[];
  readonly subresources: readonly string[];
}

export interface DiscoveryOptions {
  readonly client: RestClient;
  /** `--cache-dir`; the documents live in `<dir>/discovery/<server>/resources.json`. */
  readonly cacheDir?: string;
  readonly now?: () => number;
  /** How long a cached document is trusted (default 10 minutes); an unknown name always refreshes once. */
  readonly ttlMs?: number;
}

interface CacheFile {
  readonly fetchedAt: number;
  readonly server: string;
  readonly resources: ResourceInfo[];
}

interface ApiResourceJson {
  name: string;
  singularName?: string;
  namespaced?: boolean;
  kind: string;
  verbs?: string[];
  shortNames?: string[];
  categories?: string[];
}

const DEFAULT_TTL_MS = 10 * 60_000;

/** `resource.group` as kubectl prints it (`certificatesigningrequests.certificates.platform.io`, `serviceaccounts`). */
export function groupResource(info: Pick<ResourceInfo, "plural" | "group">): string {
  return info.group ? `${info.plural}.${info.group}` : info.plural;
}

/** `apiVersion` of the resource's objects. */
export function apiVersionOf(info: Pick<ResourceInfo, "group" | "version">): string {
  return info.group ? `${info.group}/${info.version}` : info.version;
}

export class Discovery {
  readonly #o: DiscoveryOptions;
  #resources: Promise<ResourceInfo[]> | undefined;
  #fresh = false;

  constructor(options: DiscoveryOptions) {
    this.#o = options;
  }

  /** Every resource the server serves, preferred versions first. */
  all(): Promise<ResourceInfo[]> {
    this.#resources ??= this.#load();
    return this.#resources;
  }

  /** The resource a command-line type names; NOT_FOUND in kubectl's words when none does. */
  async resolve(name: string): Promise<ResourceInfo> {
    const found = match(await this.all(), name);
    if (found) return found;
    if (!this.#fresh) {
      this.#resources = this.#fetchAndStore();
      const again = match(await this.#resources, name);
      if (again) return again;
    }
    throw new PlatformError("NOT_FOUND", `the server doesn't have a resource type "${name}"`);
  }

  /** The resource of an object's apiVersion and kind (for -f files). */
  async forObject(apiVersion: string, kind: string): Promise<ResourceInfo> {
    const slash = apiVersion.indexOf("/");
    const [group, version] = slash < 0 ? ["", apiVersion] : [apiVersion.slice(0, slash), apiVersion.slice(slash + 1)];
    const find = (list: ResourceInfo[]) => list.find((r) => r.group === group && r.version === version && r.kind === kind);
    const found = find(await this.all()) ?? (this.#fresh ? undefined : find(await (this.#resources = this.#fetchAndStore())));
    if (!found) throw new PlatformError("NOT_FOUND", `no matches for kind "${kind}" in version "${apiVersion}"`);
    return found;
  }

  #cacheFile(): string | undefined {
    if (!this.#o.cacheDir) return undefined;
    const server = this.#o.client.config.server;
    // kubectl's layout: one directory per server, named after host and port with unsafe characters replaced.
    const safe = server.replace(/^https?:\/\//, "").replace(/[^A-Za-z0-9.]/g, "_");
    const dir = safe.length > 80 ? createHash("sha256").update(server).digest("hex").slice(0, 32) : safe;
    return join(this.#o.cacheDir, "discovery", dir, "resources.json");
  }

  async #load(): Promise<ResourceInfo[]> {
    const file = this.#cacheFile();
    if (file) {
      try {
        const cached = JSON.parse(await readFile(file, "utf8")) as CacheFile;
        const now = (this.#o.now ?? Date.now)();
        if (cached.server === this.#o.client.config.server && now - cached.fetchedAt < (this.#o.ttlMs ?? DEFAULT_TTL_MS) && Array.isArray(cached.resources)) {
          return cached.resources;
        }
      } catch {
        // No cache, or an unreadable one: discover afresh.
      }
    }
    return this.#fetchAndStore();
  }

  async #fetchAndStore(): Promise<ResourceInfo[]> {
    this.#fresh = true;
    const resources = await fetchResources(this.#o.client);
    const file = this.#cacheFile();
    if (file) {
      const body: CacheFile = { fetchedAt: (this.#o.now ?? Date.now)(), server: this.#o.client.config.server, resources };
      try {
        await mkdir(join(file, ".."), { recursive: true, mode: 0o750 });
        const tmp = `${file}.${process.pid}.tmp`;
        await writeFile(tmp, JSON.stringify(body));
        await rename(tmp, file);
      } catch {
        // A cache that cannot be written only costs the next run a discovery.
      }
    }
    return resources;
  }
}

async function fetchResources(client: RestClient): Promise<ResourceInfo[]> {
  const core = await client.request<{ versions?: string[] }>("GET", "/api");
  const groups = await client.request<{ groups?: { name: string; versions: { version: string }[]; preferredVersion?: { version: string } }[] }>("GET", "/apis");
  const lists: { group: string; version: string; preferred: boolean }[] = (core.versions ?? []).map((v, i) => ({ group: "", version: v, preferred: i === 0 }));
  for (const g of groups.groups ?? []) {
    const preferred = g.preferredVersion?.version ?? g.versions[0]?.version;
    for (const v of g.versions) lists.push({ group: g.name, version: v.version, preferred: v.version === preferred });
  }
  const fetched = await Promise.all(
    lists.map(async (l) => ({ ...l, doc: await client.request<{ resources?: ApiResourceJson[] }>("GET", l.group ? `/apis/${l.group}/${l.version}` : `/api/${l.version}`) })),
  );
  const out: ResourceInfo[] = [];
  for (const { group, version, preferred, doc } of fetched) {
    const all = doc.resources ?? [];
    for (const r of all) {
      if (r.name.includes("/")) continue;
      out.push({
        group,
        version,
        preferred,
        plural: r.name,
        singular: r.singularName || r.kind.toLowerCase(),
        kind: r.kind,
        namespaced: r.namespaced === true,
        verbs: r.verbs ?? [],
        shortNames: r.shortNames ?? [],
        categories: r.categories ?? [],
        subresources: all.filter((s) => s.name.startsWith(`${r.name}/`)).map((s) => s.name.slice(r.name.length + 1)),
      });
    }
  }
  // Preferred versions first, so a bare name picks the version the server prefers.
  return [...out.filter((r) => r.preferred), ...out.filter((r) => !r.preferred)];
}

/** kubectl's rules: plural, singular, short name or kind (any case), optionally `.group` or `.version.group`. */
export function match(resources: readonly ResourceInfo[], text: string): ResourceInfo | undefined {
  const lower = text.toLowerCase();
  const named = (r: ResourceInfo, n: string) => r.plural === n || r.singular === n || r.shortNames.includes(n) || r.kind.toLowerCase() === n;
  const bare = resources.find((r) => named(r, lower));
  if (bare) return bare;
  const dot = lower.indexOf(".");
  if (dot < 0) return undefined;
  const [name, rest] = [lower.slice(0, dot), lower.slice(dot + 1)];
  const byGroup = resources.find((r) => named(r, name) && r.group === rest);
  if (byGroup) return byGroup;
  const dot2 = rest.indexOf(".");
  const [version, group] = dot2 < 0 ? [rest, ""] : [rest.slice(0, dot2), rest.slice(dot2 + 1)];
  return resources.find((r) => named(r, name) && r.version === version && r.group === group);
}
