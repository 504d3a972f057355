// Assembles identity and access for a secure server: authenticators, RBAC with system:masters, admission, token handlers.
import type { GroupNames } from "../../api/group.js";
import { invalidOption, PlatformError } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import { enabledAdmissionPlugins, type AdmissionPluginConfigs, type AdmissionPluginName } from "../../config/admission-config.js";
import { admissionPlugins } from "../auth/admission-plugins.js";
import { AdmissionChain } from "../auth/admission.js";
import { createAuthPipeline } from "../auth/auth-pipeline.js";
import { AuthenticatorChain, type AuthnRequest } from "../auth/authn-chain.js";
import { ServiceAccountAuthenticator } from "../auth/authn-service-account.js";
import { loadCredentialFile, TokenFileAuthenticator, type CredentialEntry } from "../auth/authn-token-file.js";
import { X509Authenticator } from "../auth/authn-x509.js";
import { privilegedGroupsAuthorizer, type Authorizer } from "../auth/authorizer.js";
import { applyBootstrapPolicy } from "../auth/bootstrap-policy.js";
import { StorageRbacLister } from "../auth/rbac-lister.js";
import { RbacAuthorizer } from "../auth/rbac.js";
import { StorageRevocationList, type RevocationUnavailable } from "../auth/revocation-list.js";
import { namespaceLabelsLookup, registryBootstrapWriter, registryLookups } from "../auth/registry-adapters.js";
import { ServiceAccountTokens, type ObjectLookup, type TokenLookups } from "../auth/service-account-tokens.js";
import { createSelfSubjectAccessReviewHandler, createSubjectAccessReviewHandler } from "../auth/subject-access-review.js";
import { createSelfSubjectRulesReviewHandler } from "../auth/rules-review.js";
import { createSelfSubjectReviewHandler, createTokenRequestHandler, createTokenReviewHandler } from "../auth/token-handlers.js";
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
  readonly issuer?: string;
  /** Client certificates while the revocation list cannot be read: "deny" (default) or "allow" (docs/revocation.md). */
  readonly revocationUnavailable?: RevocationUnavailable;
  /** The admission plugins that run and their configurations (default: those on by default). */
  readonly admission?: AdmissionSettings;
}

export interface AdmissionSettings {
  readonly plugins: readonly AdmissionPluginName[];
  readonly configs?: AdmissionPluginConfigs;
}

export interface SecureAuth {
  readonly pipeline: Pipeline;
  readonly authorizer: Authorizer;
  readonly tokens: ServiceAccountTokens;
  /** Loads the token file (or takes `tokenEntries`, its entries already read) and the signing key; call before the server serves. */
  load(tokenEntries?: readonly CredentialEntry[]): Promise<void>;
  /** Registers TokenRequest, TokenReview, SelfSubjectReview, SubjectAccessReview, SelfSubjectAccessReview and SelfSubjectRulesReview, and the object lookups tokens need. */
  attach(server: { readonly registry: Registry; registerCreateHandler: Registry["registerCreateHandler"] }): void;
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
  const authorizer = privilegedGroupsAuthorizer(rbac);
  const revocations = new StorageRevocationList({ storage, names, clock, logger, whenUnavailable: options.revocationUnavailable ?? "deny" });
  const tokens = new ServiceAccountTokens({ dataDir: options.keyDir, issuer: options.issuer ?? DEFAULT_TOKEN_ISSUER, names, clock, logger });
  const settings = options.admission ?? { plugins: enabledAdmissionPlugins({}) };
  // The registry is attached later: namespace labels are read through it once it is.
  const namespaceLabels = (ns: string): Promise<Readonly<Record<string, string>> | undefined> => (registry ? namespaceLabelsLookup(registry)(ns) : Promise.resolve(undefined));
  const plugins = admissionPlugins(settings.plugins, { lister, clock, webhooks: { namespaceLabels }, ...(settings.configs && { configs: settings.configs }) });
  const admission = new AdmissionChain({ names, authorizer, logger, ...plugins });
  let tokenFile: TokenFileAuthenticator | undefined;
  let chain: AuthenticatorChain | undefined;
  let registry: Registry | undefined;
  let lookups: TokenLookups | undefined;
  // The registry exists only once the server is built from this pipeline, so object lookups are bound in attach().
  const late = (pick: (l: TokenLookups) => ObjectLookup | undefined): ObjectLookup => (ns, name) => {
    if (!lookups) throw new PlatformError("NOT_READY", "the API server is not attached to identity yet");
    return pick(lookups)!(ns, name);
  };
  const lateLookups: TokenLookups = { serviceAccount: late((l) => l.serviceAccount), pod: late((l) => l.pod), secret: late((l) => l.secret) };
  const authenticator = {
    async authenticate(request: AuthnRequest) {
      if (!chain) return { error: "the server is starting: authentication is not loaded yet" };
      return chain.authenticate(request);
    },
  };
  const pipeline = createAuthPipeline({ authenticator, authorizer, admission, names, logger });
  return {
    pipeline,
    authorizer,
    tokens,
    async load(tokenEntries) {
      const entries = tokenEntries ?? (options.tokenFile ? await loadCredentialFile(options.tokenFile) : undefined);
      if (entries) tokenFile = new TokenFileAuthenticator(entries);
      await tokens.start();
      // Loaded before the first request: a revoked certificate is refused from the start, restarts included.
      await revocations.start();
      chain = new AuthenticatorChain({
        x509: new X509Authenticator({ trustPool: options.clientCaPool, clock, revocation: revocations }),
        ...(tokenFile && { tokenFile }),
        serviceAccount: new ServiceAccountAuthenticator({ tokens, lookups: lateLookups }),
        anonymous: options.anonymous === true,
        logger,
      });
    },
    attach(server) {
      if (!chain) throw new PlatformError("NOT_READY", "load() identity before attach()");
      registry = server.registry;
      lookups = registryLookups(server.registry);
      server.registerCreateHandler("", "serviceaccounts/token", createTokenRequestHandler({ tokens, lookups: lateLookups }));
      server.registerCreateHandler(names.authentication, "tokenreviews", createTokenReviewHandler({ tokens, lookups: lateLookups, ...(tokenFile && { tokenFile }) }));
      server.registerCreateHandler(names.authentication, "selfsubjectreviews", createSelfSubjectReviewHandler());
      server.registerCreateHandler(names.authorization, "subjectaccessreviews", createSubjectAccessReviewHandler(authorizer));
      server.registerCreateHandler(names.authorization, "selfsubjectaccessreviews", createSelfSubjectAccessReviewHandler(authorizer));
      // system:masters' rules come from the bootstrap cluster-admin binding, so RBAC alone lists them, as upstream.
      server.registerCreateHandler(names.authorization, "selfsubjectrulesreviews", createSelfSubjectRulesReviewHandler(rbac));
    },
    async start(signal) {
      if (!registry) throw new PlatformError("NOT_READY", "attach() the API server before start()");
      const { created } = await applyBootstrapPolicy(names, registryBootstrapWriter(registry), logger);
      await lister.start(signal);
      return created;
    },
    stop() {
      lister.stop();
      revocations.stop();
      tokens.stop();
    },
  };
}
