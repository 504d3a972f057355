// The product's logger: pino JSON with private keys, tokens and CSR bytes redacted wherever they appear.
import { pino, type Logger, type LoggerOptions } from "pino";

export type { Logger };

/** Paths pino replaces with "[redacted]"; covers objects logged whole (CSRs, configs, requests). */
export const REDACT_PATHS = [
  "privateKey", "*.privateKey", "key", "*.key", "keyPem", "*.keyPem", "clientKeyData", "*.clientKeyData",
  "*.*.clientKeyData", "token", "*.token", "*.*.token", "password", "*.password", "authorization",
  "*.authorization", "headers.authorization", "req.headers.authorization", "request", "*.request",
  "spec.request", "*.spec.request", "csr", "*.csr", "client-key-data", "*.client-key-data",
];

export interface LoggerSettings {
  readonly level?: string;
  readonly name?: string;
  /** Destination stream; defaults to stderr so stdout stays clean for command output. */
  readonly destination?: NodeJS.WritableStream;
}

export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    level: settings.level ?? process.env.PLATFORM_LOG_LEVEL ?? "info",
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    base: settings.name ? { component: settings.name } : undefined,
  };
  return pino(options, (settings.destination ?? process.stderr) as pino.DestinationStream);
}

/** A logger that drops everything: the default for library use and tests. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
