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

/**
 * A child of `logger` with `bindings`, each key written once per line. pino appends a child's bindings to its
 * parent's, so binding a key the parent already binds would put it twice on every line (and a JSON parse keeps only
 * the last): a key bound to the same value is left out, one bound to another value is written as `key_2` (`key_3`...).
 * Sub-components should still pick keys of their own (`subsystem`, `controller`) rather than rebind `component`.
 */
export function childLogger(logger: Logger, bindings: Readonly<Record<string, unknown>>): Logger {
  const bound = logger.bindings();
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(bindings)) {
    if (value === undefined) continue;
    if (!(key in bound)) {
      own[key] = value;
    } else if (JSON.stringify(bound[key]) !== JSON.stringify(value)) {
      let n = 2;
      while (`${key}_${n}` in bound || `${key}_${n}` in own) n++;
      own[`${key}_${n}`] = value;
    }
  }
  return logger.child(own);
}

/** A logger that drops everything: the default for library use and tests. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
