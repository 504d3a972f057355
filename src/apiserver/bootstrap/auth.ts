// Assembles identity and access for a secure server: authenticators, RBAC with system:masters, admission, token handlers.
import type { GroupNames } from "../../api/group.js";
import { invalidOption, PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { enabledAdmissionPlugins, type AdmissionPluginConfigs, type AdmissionPluginName } from "../../config/admission-config.js";
import { admissionPlugins } from "../auth/admission-plugins.js";
import { AdmissionChain } from "../auth/admission.js";
import { createAuthPipeline } from "../auth/auth-pipeline.js";
import { AuthenticatorChain, type AuthnRequest } from "../auth/authn-chain.js";
import { AuthenticationConfigFile, type AuthenticationConfigFileOptions } from "../auth/authn-config-reload.js";
import { ServiceAccountAuthenticator } from "../auth/authn-service-account.js";
import { loadCredentialFile, TokenFileAuthenticator, type CredentialEntry } from "../auth/authn-token-file.js";
import { X509Authenticator } from "../auth/authn-x509.js";
import { privilegedGroupsAuthorizer, type Authorizer } from "../auth/authorizer.js";
import { ReloadingAuthorizerChain } from "../auth/authz-chain.js";
import type { LoadedAuthorizationConfig } from "../../config/authorization-config.js";
import type { Dialer } from "../webhook/client.js";
import { applyBootstrapPolicy } from "../auth/bootstrap-policy.js";
import { StorageRbacLister } from "../auth/rbac-lister.js";
import { RbacAuthorizer } from "../auth/rbac.js";
import { StorageRevocationList, type RevocationUnavailable } from "../auth/revocation-list.js";
import { namespaceLabelsLookup, registryBootstrapWriter, registryLookups } from "../auth/registry-adapters.js";
import { ServiceAccountTokens, type ObjectLookup, type TokenLookups } from "../auth/service-account-tokens.js";
import { followTokenObjects } from "../auth/token-objects.js";
import { BootstrapTokenAuthenticator } from "../auth/authn-bootstrap-token.js";
import { createSelfSubjectAccessReviewHandler, createSubjectAccessReviewHandler } from "../auth/subject-access-review.js";
import { createSelfSubjectRulesReviewHandler, type RuleResolver } from "../auth/rules-review.js";
import { createSelfSubjectReviewHandler, createTokenRequestHandler, createTokenReviewHandler } from "../auth/token-handlers.js";
import type { ApiServerMetrics } from "../metrics.js";
import type { Pipeline } from "../pipeline.js";
import type { Registry } from "../registry/registry.js";
import type { Clock } from "../../time/clock.js";
import type { Storage } from "../storage/types.js";

/** The `iss` of ServiceAccount tokens and the API server's own audience: stable across restarts and ports. */
export const DEFAULT_TOKEN_ISSUER = "https://platform-ca.platform-system.svc";

export interface SecureAuthOptions {
  readonly storage: Storage;
  readonly names: GroupNames;
  readonly clock: Clock;
  readonly logger?: Logger;
  /** Directory of the ServiceAccount token signing key (created there on first start). */
  readonly keyDir: string;
  /** PEM CA certificates client certificates must chain to; read on every request, so a rotated CA is picked up. */
  readonly clientCaPool: () => readonly string[];
  /** Static token file (`token,user,uid,"groups"`). */
  readonly tokenFile?: string;
  /** Requests without credentials become system:anonymous instead of a 401. Default false. */
  readonly anonymous?: boolean;
  /** Bootstrap tokens kept as Secrets authenticate (`--enable-bootstrap-token-auth`). Default false. */
  readonly bootstrapTokens?: boolean;
  readonly issuer?: string;
  /** Client certificates while the revocation list cannot be read: "deny" (default) or "allow" (docs/revocation.md). */
  readonly revocationUnavailable?: RevocationUnavailable;
  /** The admission plugins that run and their configurations (default: those on by default). */
  readonly admission?: AdmissionSettings;
  /** The AuthenticationConfiguration file (JWT issuers, anonymous access), reloaded on change; `agentFor` dials issuers (egress). */
  readonly authenticationConfig?: AuthenticationConfigSettings;
  /** `--authorization-config`: the authorizer chain (default RBAC alone), followed for changes. */
  readonly authorization?: AuthorizationSettings;
}

export interface AuthorizationSettings {
  readonly file: string;
  /** The file as checked at start (the chain is built from it, then the file is followed). */
  readonly config: LoadedAuthorizationConfig;
  /** How the webhooks are reached (the `controlplane` egress selection); default directly. */
  readonly dial?: Dialer;
}

export type AuthenticationConfigSettings = Pick<AuthenticationConfigFileOptions, "path" | "checkIntervalMs" | "agentFor">;

export interface AdmissionSettings {
  readonly plugins: readonly AdmissionPluginName[];
  readonly configs?: AdmissionPluginConfigs;
  /** How admission webhooks and ImagePolicyWebhook are reached (the `cluster` egress selection, as upstream); default directly. */
  readonly dial?: Dialer;
}

export interface SecureAuth {
  readonly pipeline: Pipeline;
  readonly authorizer: Authorizer;
  readonly tokens: ServiceAccountTokens;
  /** Loads the token file (or takes `tokenEntries`, its entries already read) and the signing key; call before the server serves. */
  load(tokenEntries?: readonly CredentialEntry[]): Promise<void>;
  /** Registers TokenRequest, TokenReview, SelfSubjectReview, SubjectAccessReview, SelfSubjectAccessReview and SelfSubjectRulesReview, and the object lookups tokens need. */
  attach(server: { readonly registry: Registry; registerCreateHandler: Registry["registerCreateHandler"]; readonly metrics?: ApiServerMetrics }): void;
  /** Creates the missing bootstrap RBAC objects and completes the existing ones, then loads RBAC from storage and follows it. */
  start(signal?: AbortSignal): Promise<string[]>;
  stop(): void;
}

/** Identity and access of a secure server; load() → attach(server) → start(), in that order. */
export function createSecureAuth(options: SecureAuthOptions): SecureAuth {
  if (!options?.storage) throw invalidOption("storage", "to be a Storage", options?.storage);
  if (!options.names) throw invalidOption("names", "to be GroupNames", options.names);
  if (typeof options.clientCaPool !== "function") throw invalidOption("clientCaPool", "to be a function", options.clientCaPool);
  const { storage, names, clock } = options;
  const logger = options.logger ?? silentLogger();
  const lister = new StorageRbacLister({ storage, names, clock, logger });
  const rbac = new RbacAuthorizer({ lister, names, logger });
  let configured: ReloadingAuthorizerChain | undefined;
  // /metrics exists once the server does (attach()); webhook calls before that are not counted.
  let metrics: ApiServerMetrics | undefined;
  const configuredChain: Authorizer = {
    authorize: (a) => configured?.authorize(a) ?? { allowed: false, reason: "the server is starting: authorization is not loaded yet", evaluationErrors: [] },
  };
  // system:masters first, as upstream's privileged-group authorizer, then RBAC or the configured chain.
  const authorizer = privilegedGroupsAuthorizer(options.authorization ? configuredChain : rbac);
  const revocations = new StorageRevocationList({ storage, names, clock, logger, whenUnavailable: options.revocationUnavailable ?? "deny" });
  const tokens = new ServiceAccountTokens({ dataDir: options.keyDir, issuer: options.issuer ?? DEFAULT_TOKEN_ISSUER, names, clock, logger });
  const settings = options.admission ?? { plugins: enabledAdmissionPlugins({}) };
  // The registry is attached later: namespace labels are read through it once it is.
  const namespaceLabels = (ns: string): Promise<Readonly<Record<string, string>> | undefined> => (registry ? namespaceLabelsLookup(registry)(ns) : Promise.resolve(undefined));
  const plugins = admissionPlugins(settings.plugins, { lister, clock, webhooks: { namespaceLabels, ...(settings.dial && { dial: settings.dial }) }, ...(settings.configs && { configs: settings.configs }) });
  const admission = new AdmissionChain({ names, authorizer, logger, ...plugins });
  let tokenFile: TokenFileAuthenticator | undefined;
  let chain: AuthenticatorChain | undefined;
  let stopFollowingTokens: (() => void) | undefined;
  let registry: Registry | undefined;
  let lookups: TokenLookups | undefined;
  // The registry exists only once the server is built from this pipeline, so object lookups are bound in attach().
  const late = (pick: (l: TokenLookups) => ObjectLookup | undefined): ObjectLookup => (ns, name) => {
    if (!lookups) throw new PlatformError("NOT_READY", "the API server is not attached to identity yet");
    return pick(lookups)!(ns, name);
  };
  const lateLookups: TokenLookups = {
    serviceAccount: late((l) => l.serviceAccount),
    pod: late((l) => l.pod),
    secret: late((l) => l.secret),
    labelSecret: (...args) => (lookups?.labelSecret ? lookups.labelSecret(...args) : Promise.resolve()),
  };
  const authenticator = {
    async authenticate(request: AuthnRequest) {
      if (!chain) return { error: "the server is starting: authentication is not loaded yet" };
      return chain.authenticate(request);
    },
  };
  const configFile = options.authenticationConfig
    ? new AuthenticationConfigFile({ ...options.authenticationConfig, groupSuffix: names.suffix, anonymousFlagSet: options.anonymous === true, serviceAccountIssuer: tokens.issuer, clock, logger })
    : undefined;
  const pipeline = {
    ...createAuthPipeline({ authenticator, authorizer, admission, names, logger }),
    // Not ready until every JWT issuer's keys are fetched: tokens of an issuer without keys would all get a 401.
    readinessChecks: () => (configFile ? [{ name: "authentication-jwt-issuers", run: async () => jwtIssuersReady(configFile) }] : []),
  };
  return {
    pipeline,
    authorizer,
    tokens,
    async load(tokenEntries) {
      const entries = tokenEntries ?? (options.tokenFile ? await loadCredentialFile(options.tokenFile) : undefined);
      if (entries) tokenFile = new TokenFileAuthenticator(entries);
      await tokens.start();
      if (options.authorization) {
        const { file, config, dial } = options.authorization;
        const observe = (name: string, result: string, ms: number) => metrics?.authorizationWebhook(name, result, ms);
        configured = await ReloadingAuthorizerChain.start({ file, rbac, names, clock, logger, observe, ...(dial && { dial }), load: { groupSuffix: names.suffix } }, config);
      }
      // Loaded before the first request: a revoked certificate is refused from the start, restarts included.
      await revocations.start();
      await configFile?.start();
      chain = new AuthenticatorChain({
        x509: new X509Authenticator({ trustPool: options.clientCaPool, clock, revocation: revocations }),
        ...(tokenFile && { tokenFile }),
        serviceAccount: new ServiceAccountAuthenticator({ tokens, lookups: lateLookups, onInvalidatedLegacyToken: () => metrics?.invalidatedLegacyTokenUsed() }),
        ...(options.bootstrapTokens && { bootstrapToken: new BootstrapTokenAuthenticator({ secret: lateLookups.secret!, names, clock, logger }) }),
        anonymous: options.anonymous === true,
        ...(configFile && { configured: () => configFile.current }),
        clock,
        logger,
      });
      // Before any request: a token the cache remembers is forgotten as soon as its ServiceAccount, Pod or Secret changes.
      stopFollowingTokens = followTokenObjects(storage, chain, clock, logger);
    },
    attach(server) {
      if (!chain) throw new PlatformError("NOT_READY", "load() identity before attach()");
      registry = server.registry;
      metrics = server.metrics;
      lookups = registryLookups(server.registry);
      server.registerCreateHandler("", "serviceaccounts/token", createTokenRequestHandler({ tokens, lookups: lateLookups }));
      const reviewing = chain;
      server.registerCreateHandler(names.authentication, "tokenreviews", createTokenReviewHandler({ review: (token, audiences) => reviewing.reviewToken(token, audiences) }));
      server.registerCreateHandler(names.authentication, "selfsubjectreviews", createSelfSubjectReviewHandler());
      server.registerCreateHandler(names.authorization, "subjectaccessreviews", createSubjectAccessReviewHandler(authorizer));
      server.registerCreateHandler(names.authorization, "selfsubjectaccessreviews", createSelfSubjectAccessReviewHandler(authorizer));
      // system:masters' rules come from the bootstrap cluster-admin binding, so RBAC lists them, as upstream; with an
      // AuthorizationConfiguration, the union of what each configured authorizer can list.
      const rules: RuleResolver = options.authorization ? { rulesFor: (user, ns) => configured?.rulesFor(user, ns) ?? { rules: [], errors: [], incomplete: true } } : rbac;
      server.registerCreateHandler(names.authorization, "selfsubjectrulesreviews", createSelfSubjectRulesReviewHandler(rules));
    },
    async start(signal) {
      if (!registry) throw new PlatformError("NOT_READY", "attach() the API server before start()");
      const { created } = await applyBootstrapPolicy(names, registryBootstrapWriter(registry), logger);
      await lister.start(signal);
      return created;
    },
    stop() {
      stopFollowingTokens?.();
      configFile?.stop();
      configured?.stop();
      lister.stop();
      revocations.stop();
      tokens.stop();
    },
  };
}

function jwtIssuersReady(file: AuthenticationConfigFile): void {
  const pending = file.notReady();
  if (pending.length > 0) throw new Error(`the keys of ${pending.map((p) => `issuer ${p.issuer} (${p.reason})`).join(", ")} are not fetched yet`);
}
