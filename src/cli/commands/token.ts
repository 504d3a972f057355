// `platform-ca token create|list|delete`: bootstrap tokens as kubeadm's `token` commands make them, through the API
// with an administrator's client config (their Secrets, the authenticator's and the controllers' one format).
import { randomInt } from "node:crypto";
import type { Command } from "commander";
import { DEFAULT_GROUP_SUFFIX, type GroupNames } from "../../api/group.js";
import { CORE_VERSION, type ConfigMap, type Secret } from "../../api/types/core.js";
import { CLUSTER_INFO_KUBECONFIG_KEY, CLUSTER_INFO_NAME, clusterInfoCluster } from "../../api/cluster-info.js";
import { caCertHashes, discoveryConfig, readClusterInfo } from "./join.js";
import { BOOTSTRAP_EXTRA_GROUP, BOOTSTRAP_TOKEN, bootstrapTokenSecretName, secretExpiry } from "../../apiserver/auth/authn-bootstrap-token.js";
import { decodedData, toBase64 } from "../../api/base64-text.js";
import { shortHumanDuration } from "../../apiserver/registry/resources/printing.js";
import { addClientFlags, createClient, defaultUserAgent, restConfigFromFlags, type ClientFlags, type RestClient } from "../../client/index.js";
import type { ResourceClient } from "../../client/types.js";
import { isPlatformError, PlatformError } from "../../errors.js";
import { parseDuration } from "../../fields/duration.js";
import { rfc3339 } from "../../time/rfc3339.js";
import { formatTable } from "../table.js";
import { groupNamesFlag, UsageError, type CommandModule } from "../program.js";

interface TokenFlags extends ClientFlags {
  readonly groupSuffix?: string;
  readonly ttl?: string;
  readonly usages?: string;
  readonly groups?: string;
  readonly description?: string;
  readonly printJoinCommand?: boolean;
}

const USAGES = ["signing", "authentication"] as const;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
const randomText = (n: number) => Array.from({ length: n }, () => ALPHABET[randomInt(ALPHABET.length)]).join("");

/** A new token `<6>.<16>` of `[a-z0-9]`, drawn without bias from the system's CSPRNG (kubeadm's format). */
export function newBootstrapToken(): string {
  return `${randomText(6)}.${randomText(16)}`;
}

/** The Secret of a token with the flags' usages, extra groups, description and time to live (0: none). */
export function bootstrapTokenSecret(names: GroupNames, token: string, o: { ttlMs: number; usages: readonly string[]; groups: readonly string[]; description?: string; now: number }): Secret {
  const [id, secret] = token.split(".") as [string, string];
  const data: Record<string, string> = { "token-id": id, "token-secret": secret };
  if (o.ttlMs > 0) data.expiration = rfc3339(new Date(o.now + o.ttlMs));
  for (const usage of o.usages) data[`usage-bootstrap-${usage}`] = "true";
  if (o.groups.length > 0) data["auth-extra-groups"] = o.groups.join(",");
  if (o.description) data.description = o.description;
  const { namespace, secretType } = names.bootstrapTokens;
  return {
    apiVersion: CORE_VERSION,
    kind: "Secret",
    type: secretType,
    metadata: { name: bootstrapTokenSecretName(id), namespace },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, toBase64(v)])),
  };
}

function parseFlags(flags: TokenFlags): { ttlMs: number; usages: string[]; groups: string[] } {
  const ttlMs = flags.ttl === "0" ? 0 : parseDuration(flags.ttl ?? "24h");
  if (ttlMs === undefined || ttlMs < 0) throw new UsageError(`--ttl ${JSON.stringify(flags.ttl)}: expected a duration such as 24h, 30m or 0 (never expires)`);
  const usages = (flags.usages ?? USAGES.join(",")).split(",").filter((u) => u !== "");
  const badUsage = usages.find((u) => !(USAGES as readonly string[]).includes(u));
  if (badUsage !== undefined || usages.length === 0) throw new UsageError(`--usages ${JSON.stringify(flags.usages)}: expected a comma-separated list of ${USAGES.join(", ")}`);
  const groups = (flags.groups ?? "").split(",").filter((g) => g !== "");
  const badGroup = groups.find((g) => !BOOTSTRAP_EXTRA_GROUP.test(g));
  if (badGroup !== undefined) throw new UsageError(`--groups: ${JSON.stringify(badGroup)} is not a group below system:bootstrappers: (e.g. system:bootstrappers:workers)`);
  return { ttlMs, usages, groups };
}

/** `platform-ca join` with the server and CA pin cluster-info publishes (which the node will check) and this token. */
async function joinCommandFor(client: RestClient, names: GroupNames, token: string): Promise<string> {
  const namespace = names.bootstrapTokens.publicNamespace;
  let cm: ConfigMap;
  try {
    cm = await client.resource<ConfigMap>({ group: "", version: CORE_VERSION, plural: "configmaps", namespaced: true }).get(CLUSTER_INFO_NAME, { namespace });
  } catch (err) {
    if (!isPlatformError(err, "NOT_FOUND")) throw err;
    throw new PlatformError("NOT_FOUND", `${namespace}/${CLUSTER_INFO_NAME} is not published: start the server with platform-ca up --enable-bootstrap-token-auth`);
  }
  const cluster = clusterInfoCluster(cm.data?.[CLUSTER_INFO_KUBECONFIG_KEY] ?? "");
  if (!cluster) throw new PlatformError("INTERNAL", `${namespace}/${CLUSTER_INFO_NAME} names no server or CA`);
  const pins = caCertHashes(cluster.caPem).map((p) => `--discovery-token-ca-cert-hash ${p}`);
  const suffix = names.suffix === DEFAULT_GROUP_SUFFIX ? "" : ` --group-suffix ${names.suffix}`;
  await warnIfNodesCannotRead(names, cluster);
  return `platform-ca join ${cluster.server} --token ${token} ${pins.join(" ")} -o bootstrap.conf${suffix}`;
}

/**
 * A node's first read is cluster-info without credentials, which the server refuses unless anonymous requests are on
 * for that path (docs/operations.md "Discovery"): say so beside a join command that would fail. A server this machine
 * cannot reach at the published address (nodes may) gets no warning.
 */
async function warnIfNodesCannotRead(names: GroupNames, cluster: { readonly server: string; readonly caPem: string }): Promise<void> {
  try {
    await readClusterInfo(names, discoveryConfig(cluster.server, { ca: cluster.caPem }, 3_000));
  } catch (err) {
    if (isPlatformError(err, "UNAUTHORIZED") || isPlatformError(err, "FORBIDDEN")) process.stderr.write(`Warning: the join command fails as the server stands: ${err.message}\n`);
  }
}

async function withSecrets<T>(flags: TokenFlags, run: (secrets: ResourceClient<Secret>, names: GroupNames, client: RestClient) => Promise<T>): Promise<T> {
  const names = groupNamesFlag(flags.groupSuffix);
  const config = await restConfigFromFlags(flags, process.env, { groupSuffix: names.suffix, userAgent: defaultUserAgent("platform-ca-token") });
  const client = createClient(config, { groupSuffix: names.suffix });
  try {
    return await run(client.resource<Secret>({ group: "", version: CORE_VERSION, plural: "secrets", namespaced: true }), names, client);
  } finally {
    client.close();
  }
}

/** The rows of `token list`: kubeadm's columns, its TTL rounded down to one unit. */
export function tokenRows(items: readonly Secret[], now: number): string[][] {
  return items.flatMap((s) => {
    const data = decodedData(s.data);
    const id = data["token-id"];
    const secret = data["token-secret"];
    if (id === undefined || secret === undefined || !BOOTSTRAP_TOKEN.test(`${id}.${secret}`)) return [];
    const expiration = data.expiration;
    const at = secretExpiry(s.data);
    const ttl = at === undefined ? "<forever>" : !(at > now) ? "<invalid>" : shortHumanDuration((at - now) / 1000);
    const usages = USAGES.filter((u) => data[`usage-bootstrap-${u}`] === "true").join(",");
    return [[`${id}.${secret}`, ttl, expiration ?? "<never>", usages || "<none>", data.description || "<none>", data["auth-extra-groups"] || "<none>"]];
  });
}

export const tokenCommand: CommandModule = (program: Command) => {
  const token = program.command("token").description("bootstrap tokens for joining node agents (as kubeadm token): create, list, delete");
  const examples = (...lines: string[]) => `\nExamples:\n${lines.map((l) => `  platform-ca token ${l}`).join("\n")}\n`;
  token.addHelpText("after", examples("create --platformconfig .platform/admin.conf", "list --platformconfig .platform/admin.conf"));
  const common = (cmd: Command) =>
    addClientFlags(cmd.option("--group-suffix <suffix>", "API group suffix; k8s.io keeps tokens in kube-system with upstream's Secret type", DEFAULT_GROUP_SUFFIX));
  common(
    token
      .command("create [token]")
      .description("create a bootstrap token (random unless given as <6 of [a-z0-9]>.<16 of [a-z0-9]>) and print it")
      .option("--ttl <duration>", "time until the token expires and is deleted; 0: never", "24h")
      .option("--usages <list>", "what the token may be used for: signing (cluster-info), authentication", USAGES.join(","))
      .option("--groups <list>", "extra groups of the token's user, each below system:bootstrappers:")
      .option("--description <text>", "what the token is for")
      .option("--print-join-command", "print the `platform-ca join` command a node runs with it (server and CA pin from cluster-info)")
      .addHelpText("after", examples("create --platformconfig .platform/admin.conf --description 'rack 4'", "create abcdef.0123456789abcdef --ttl 2h --usages authentication --groups system:bootstrappers:workers")),
  ).action(async (given: string | undefined, flags: TokenFlags) => {
    const o = parseFlags(flags);
    if (given !== undefined && !BOOTSTRAP_TOKEN.test(given)) throw new UsageError(`token ${JSON.stringify(given)}: expected 6 and 16 characters of [a-z0-9] joined by a dot (abcdef.0123456789abcdef)`);
    const value = given ?? newBootstrapToken();
    const line = await withSecrets(flags, async (secrets, names, client) => {
      // The join command needs what cluster-info publishes: read before the token exists, so a failure leaves none.
      const join = flags.printJoinCommand ? await joinCommandFor(client, names, value) : undefined;
      const secret = bootstrapTokenSecret(names, value, { ...o, ...(flags.description !== undefined && { description: flags.description }), now: Date.now() });
      await secrets.create(secret, { namespace: secret.metadata.namespace! });
      return join ?? value;
    });
    process.stdout.write(`${line}\n`);
  });
  common(token.command("list").description("list bootstrap tokens: TOKEN TTL EXPIRES USAGES DESCRIPTION EXTRA GROUPS").addHelpText("after", examples("list --platformconfig .platform/admin.conf --group-suffix k8s.io"))).action(async (flags: TokenFlags) => {
    const rows = await withSecrets(flags, async (secrets, names) => {
      const { namespace, secretType } = names.bootstrapTokens;
      const list = await secrets.list({ namespace, fieldSelector: `type=${secretType}` });
      return tokenRows(list.items, Date.now());
    });
    process.stdout.write(formatTable(["TOKEN", "TTL", "EXPIRES", "USAGES", "DESCRIPTION", "EXTRA GROUPS"], rows));
  });
  common(
    token
      .command("delete <token...>")
      .description("delete bootstrap tokens, each given as its id or the whole token")
      .addHelpText("after", examples("delete abcdef --platformconfig .platform/admin.conf")),
  ).action(async (given: string[], flags: TokenFlags) => {
    const ids = given.map((t) => {
      const id = /^([a-z0-9]{6})(\.[a-z0-9]{16})?$/.exec(t)?.[1];
      if (id === undefined) throw new UsageError(`${JSON.stringify(t)}: expected a token id (6 of [a-z0-9]) or a whole token`);
      return id;
    });
    await withSecrets(flags, async (secrets, names) => {
      for (const id of ids) {
        try {
          await secrets.delete(bootstrapTokenSecretName(id), { namespace: names.bootstrapTokens.namespace });
        } catch (err) {
          if (isPlatformError(err, "NOT_FOUND")) throw new PlatformError("NOT_FOUND", `bootstrap token "${id}" not found`);
          throw err;
        }
        process.stdout.write(`bootstrap token "${id}" deleted\n`);
      }
    });
  });
};
