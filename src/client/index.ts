// The client's public surface: configuration, credentials, the REST + watch client and its parts.
export * from "./types.js";
export { createClient, pathWithQuery, type ClientOptions, type Query, type RequestOptions, type RestClient } from "./rest-client.js";
export { PATCH_CONTENT_TYPES } from "../api/meta.js";
export { ResourceClientImpl, type ResourceRef } from "./resource-client.js";
export {
  DEFAULT_BURST, DEFAULT_NAMESPACE, DEFAULT_QPS, defaultUserAgent, normalizeServer,
  type Credentials, type ExecConfig, type Impersonation, type InteractiveMode, type RestConfig, type TlsConfig,
} from "./rest-config.js";
export { CONFIG_ENV, configCandidates, loadClientConfig, mergeConfigFiles, type ClientConfig, type ConfigLocation } from "./config-file.js";
export { parseConfigFile, type ParsedConfigFile } from "./config-parse.js";
export { resolveRestConfig, type ConfigOverrides, type ResolveOptions } from "./resolve-config.js";
export { addClientFlags, flagOverrides, parseRequestTimeout, restConfigFromFlags, type ClientFlags, type FlagResolveOptions } from "./client-flags.js";
export { restConfigFromConnection, type ClientConnectionConfiguration } from "./connection-config.js";
export { createCredentialSource, TokenFile, type AuthMaterial, type CredentialOptions, type CredentialSource } from "./credentials.js";
export { EXEC_INFO_ENV, ExecPlugin, execClusterInfo, type ExecClusterInfo } from "./exec-plugin.js";
export { TokenBucket, type RateLimiter, type TokenBucketOptions } from "../time/token-bucket.js";
export { mayRetry, retryDelayMs, retryPolicy, type RetryOptions } from "./retry.js";
export { codeFor, connectionError, errorFromResponse, type CallContext } from "./status-errors.js";
export { AgentPool, sharedAgents, Transport } from "./transport.js";
export { MAX_EVENT_BYTES, parseWatchLine, watchEvents } from "./watch.js";
export { parseWarnings } from "./warnings.js";
export { systemClock, type Clock } from "../time/clock.js";
