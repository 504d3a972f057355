// The authorizer chain of an AuthorizationConfiguration: ordered, the first allow or deny decides, no opinion goes on;
// built from the loaded file (each webhook's client config read first) and rebuilt when the file changes.
import { readFile } from "node:fs/promises";
import type { RestConfig } from "../../client/rest-config.js";
import { parseAuthorizationConfig, type AuthorizationConfigOptions, type LoadedAuthorizationConfig } from "../../config/authorization-config.js";
import { contentDigest, watchConfigFile, type WatchedFile } from "../../config/watched-file.js";
import { documentError } from "../../fields/reader.js";
import { silentLogger, type Logger } from "../../logger.js";
import { loadWebhookConfig } from "../webhook/client.js";
import type { UserInfo } from "../../api/meta.js";
import type { PolicyRule } from "../../api/types/rbac.js";
import type { AuthorizationAttributes, Authorizer, AuthorizerDecision } from "./authorizer.js";
import { WebhookAuthorizer, type WebhookAuthorizerDependencies } from "./authz-webhook.js";
import { EVERYTHING, type RuleResolver, type UserRules } from "./rules-review.js";

export interface NamedAuthorizer {
  readonly name: string;
  readonly authorizer: Authorizer;
  /** What SelfSubjectRulesReview lists for this authorizer; absent → it cannot list (a webhook), so incomplete. */
  readonly rules?: RuleResolver;
  close?(): void;
}

/** Upstream's AlwaysAllow: every request allowed, and every rule listed. */
const ALWAYS_ALLOW: Omit<NamedAuthorizer, "name"> = {
  authorizer: { authorize: () => ({ allowed: true, reason: "", evaluationErrors: [] }) },
  rules: { rulesFor: () => ({ rules: EVERYTHING, errors: [] }) },
};
/** Upstream's AlwaysDeny says no opinion (a later authorizer may still allow) with this reason, and lists no rules. */
const ALWAYS_DENY: Omit<NamedAuthorizer, "name"> = {
  authorizer: { authorize: () => ({ allowed: false, reason: "Everything is forbidden.", evaluationErrors: [] }) },
  rules: { rulesFor: () => ({ rules: [], errors: [] }) },
};

/** Asks each authorizer in order; the first allow or deny decides, and names who decided. */
export class AuthorizerChain implements Authorizer {
  constructor(readonly authorizers: readonly NamedAuthorizer[]) {}

  async authorize(a: AuthorizationAttributes): Promise<AuthorizerDecision> {
    const reasons: string[] = [];
    const errors: string[] = [];
    for (const { name, authorizer } of this.authorizers) {
      const d = await authorizer.authorize(a);
      if (d.allowed || d.denied) return { ...d, authorizer: name };
      if (d.reason) reasons.push(d.reason);
      errors.push(...d.evaluationErrors);
    }
    // Nobody had an opinion: refused, with what each said (upstream's union authorizer joins them the same way).
    return { allowed: false, reason: reasons.join("; "), evaluationErrors: errors };
  }

  /** Upstream's union of each authorizer's rules: incomplete when one of them cannot list its own (a webhook). */
  async rulesFor(user: UserInfo, namespace: string): Promise<UserRules> {
    const rules: PolicyRule[] = [];
    const errors: string[] = [];
    let incomplete = false;
    for (const { name, rules: resolver } of this.authorizers) {
      if (!resolver) {
        incomplete = true;
        errors.push(`authorizer ${JSON.stringify(name)} does not support user rule resolution`);
        continue;
      }
      const r = await resolver.rulesFor(user, namespace);
      rules.push(...r.rules);
      errors.push(...r.errors);
      incomplete ||= r.incomplete === true;
    }
    return { rules, errors, incomplete };
  }

  close(): void {
    for (const a of this.authorizers) a.close?.();
  }
}

export interface ChainDependencies extends WebhookAuthorizerDependencies {
  /** The built-in RBAC authorizer, placed where the file lists `type: RBAC` (its rules listed when it can). */
  readonly rbac: Authorizer & Partial<RuleResolver>;
}

/** Builds the chain; a webhook whose client config file cannot be used refuses the whole file, naming the field. */
export async function buildAuthorizerChain(config: LoadedAuthorizationConfig, deps: ChainDependencies): Promise<AuthorizerChain> {
  const problems: { field: string; message: string }[] = [];
  const rest = new Map<string, RestConfig>();
  for (const [i, a] of config.authorizers.entries()) {
    if (a.type !== "Webhook") continue;
    const field = `authorizers[${i}].webhook.connectionInfo.kubeConfigFile`;
    try {
      rest.set(a.name, await loadWebhookConfig(a.webhook.kubeConfigFile, `client config file of authorizer ${JSON.stringify(a.name)}`, deps.names.suffix));
    } catch (err) {
      problems.push({ field, message: `\`${field}\`: ${(err as Error).message}` });
    }
  }
  if (problems.length > 0) throw documentError("CONFIG_INVALID", `authorization configuration ${config.source}`, problems);
  return new AuthorizerChain(
    config.authorizers.map((a) => {
      if (a.type === "RBAC") return { name: a.name, authorizer: deps.rbac, ...(deps.rbac.rulesFor && { rules: deps.rbac as RuleResolver }) };
      if (a.type !== "Webhook") return { name: a.name, ...(a.type === "AlwaysAllow" ? ALWAYS_ALLOW : ALWAYS_DENY) };
      const webhook = new WebhookAuthorizer({ ...deps, name: a.name, config: a.webhook, rest: rest.get(a.name)! });
      return { name: a.name, authorizer: webhook, close: () => webhook.close() };
    }),
  );
}

/** Upstream checks the file once a minute (the folder watch sees most edits at once). */
export const AUTHORIZATION_RELOAD_INTERVAL_MS = 60_000;

export interface ReloadingChainOptions extends ChainDependencies {
  readonly file: string;
  readonly load?: AuthorizationConfigOptions;
  readonly intervalMs?: number;
}

/**
 * The chain of a file, checked every interval and when its folder changes: a changed file that loads and builds
 * replaces the chain; one that does not keeps the old chain, and the reason is logged once. The replaced chain's
 * connections close after its longest timeout, so calls in flight finish.
 */
export class ReloadingAuthorizerChain implements Authorizer, RuleResolver {
  #chain: AuthorizerChain;
  #file: WatchedFile | undefined;
  readonly #o: ReloadingChainOptions;
  readonly #logger: Logger;

  private constructor(o: ReloadingChainOptions, chain: AuthorizerChain) {
    this.#o = o;
    this.#chain = chain;
    this.#logger = o.logger ?? silentLogger();
  }

  /** Loads and builds the file now (throws when it is invalid), then follows it. */
  static async start(o: ReloadingChainOptions, loaded?: LoadedAuthorizationConfig): Promise<ReloadingAuthorizerChain> {
    const text = await readFile(o.file, "utf8");
    const config = loaded ?? (await parseAuthorizationConfig(text, o.file, o.load));
    const chain = new ReloadingAuthorizerChain(o, await buildAuthorizerChain(config, o));
    chain.#file = watchConfigFile({
      path: o.file,
      initialDigest: contentDigest(text),
      pollMs: o.intervalMs ?? AUTHORIZATION_RELOAD_INTERVAL_MS,
      clock: o.clock,
      ...(o.logger && { logger: o.logger }),
      apply: (next) => chain.#swap(next),
      refused: ({ reason, unreadable }) =>
        chain.#logger.error({ file: o.file, err: reason }, `authorization configuration ${unreadable ? "unreadable" : "invalid"}; the current authorizers stay`),
    });
    return chain;
  }

  get current(): AuthorizerChain {
    return this.#chain;
  }

  authorize(a: AuthorizationAttributes): Promise<AuthorizerDecision> {
    return this.#chain.authorize(a);
  }

  rulesFor(user: UserInfo, namespace: string): Promise<UserRules> {
    return this.#chain.rulesFor(user, namespace);
  }

  /** Reads the file and swaps the chain when it changed and is valid; resolves to whether it swapped. */
  async reload(): Promise<boolean> {
    return (await this.#file?.check()) ?? false;
  }

  async #swap(text: string): Promise<void> {
    const chain = await buildAuthorizerChain(await parseAuthorizationConfig(text, this.#o.file, this.#o.load), this.#o);
    const old = this.#chain;
    this.#chain = chain;
    this.#o.clock.setTimer(30_000, () => old.close());
    this.#logger.info({ file: this.#o.file, authorizers: chain.authorizers.map((a) => a.name) }, "authorization configuration reloaded");
  }

  stop(): void {
    this.#file?.stop();
    this.#file = undefined;
    this.#chain.close();
  }
}
