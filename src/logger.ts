// The product's logger: pino, JSON for machines or coloured text (pino-pretty) for people, with private keys, tokens
// and CSR bytes redacted wherever they appear.
import { createRequire } from "node:module";
import { isatty } from "node:tty";
import { isMainThread } from "node:worker_threads";
import type { DestinationStream, Logger, LoggerOptions, pino as Pino } from "pino";

export type { Logger };

/** Paths pino replaces with "[redacted]"; covers objects logged whole (CSRs, configs, requests). */
export const REDACT_PATHS = [
  "privateKey", "*.privateKey", "key", "*.key", "keyPem", "*.keyPem", "clientKeyData", "*.clientKeyData",
  "*.*.clientKeyData", "token", "*.token", "*.*.token", "password", "*.password", "authorization",
  "*.authorization", "headers.authorization", "req.headers.authorization", "request", "*.request",
  "spec.request", "*.spec.request", "csr", "*.csr", "client-key-data", "*.client-key-data",
];

export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** How a process logs: chosen once by the command (--log-format, --log-level, -v) and handed to its threads. */
export interface LogOutput {
  readonly format?: LogFormat;
  readonly level?: string;
}

let processOutput: LogOutput = {};

/** Sets the format and level of every logger created afterwards without settings of its own. */
export function setLogOutput(output: LogOutput): void {
  processOutput = { ...output };
}

/** The format and level loggers get now: what setLogOutput chose, else PLATFORM_LOG_LEVEL and text on a terminal. */
export function logOutput(): Required<LogOutput> {
  return {
    format: processOutput.format ?? (isatty(2) ? "text" : "json"),
    level: processOutput.level ?? (process.env.PLATFORM_LOG_LEVEL || "info"),
  };
}

export interface LoggerSettings {
  readonly level?: string;
  readonly name?: string;
  /** Destination stream (always JSON); defaults to stderr so stdout stays clean for command output. */
  readonly destination?: NodeJS.WritableStream;
}

/**
 * Standard error as a destination. A worker thread writes to fd 2 itself: its process.stderr is relayed through the
 * main thread later, so its lines would land after what the main thread prints meanwhile (the `up` banner).
 */
function stderr(): NodeJS.WritableStream | 2 {
  return isMainThread ? process.stderr : 2;
}

const require = createRequire(import.meta.url);

/** pino, loaded with the first logger: a command that never logs (`platform-ca sign`) does not pay for it. */
function pinoFn(): typeof Pino {
  return (require("pino") as { pino: typeof Pino }).pino;
}

/** pino-pretty as a synchronous stream (loaded only for text: JSON-only processes never pay for it), or undefined. */
function prettyStream(): DestinationStream | undefined {
  let pretty: typeof import("pino-pretty");
  try {
    pretty = require("pino-pretty") as typeof pretty;
  } catch {
    return undefined;
  }
  return pretty({
    destination: stderr(),
    sync: true,
    colorize: isatty(2) && !process.env.NO_COLOR,
    singleLine: true,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "component",
    messageFormat: "{if component}{component}: {end}{msg}",
  });
}

export function createLogger(settings: LoggerSettings = {}): Logger {
  const output = logOutput();
  const options: LoggerOptions = {
    level: settings.level ?? output.level,
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    base: settings.name ? { component: settings.name } : undefined,
  };
  const pino = pinoFn();
  if (settings.destination) return pino(options, settings.destination as DestinationStream);
  const text = output.format === "text" ? prettyStream() : undefined;
  const dest = stderr();
  return pino(options, text ?? (dest === 2 ? pino.destination({ dest, sync: true }) : (dest as DestinationStream)));
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
  return pinoFn()({ level: "silent" });
}
