/**
 * Structured JSON logs (pino), one line per event. API keys, emails and metadata are never
 * passed to the logger; two guards stand behind that rule: `redact` for the field and header
 * names that could carry them, and a last pass over each finished line that masks anything
 * shaped like a generated API key (`ldg_…`), wherever in the line it hides (an error message,
 * a URL, a value under an unexpected name).
 */
import { type DestinationStream, type Logger as PinoLogger, pino } from "pino";
import type { Config } from "./config.ts";
import { API_KEY_PREFIX } from "./ids.ts";

/**
 * A structured logger (a pino-like subset: what the service logs through); `createApp` never
 * logs secrets through it. `createLogger`'s pino logger is one.
 */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  /** pino's `debug`, when the logger has one (probe requests and idle jobs log at it). */
  debug?(obj: object, msg?: string): void;
}

/** A silent logger for tests and tools. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

const REDACT = [
  "apiKey",
  "*.apiKey",
  "key",
  "*.key",
  "headers['x-api-key']",
  "*.headers['x-api-key']",
  "headers.authorization",
  "*.headers.authorization",
  "email",
  "*.email",
  "metadata",
  "*.metadata",
];

/** A generated key: the prefix and at least 16 base64url characters (JSON never escapes them). */
const KEY_SHAPED = new RegExp(`${API_KEY_PREFIX}[A-Za-z0-9_-]{16,}`, "g");

/** Masks every key-shaped token of one serialised log line. */
export function maskKeys(line: string): string {
  return line.includes(API_KEY_PREFIX)
    ? line.replace(KEY_SHAPED, `${API_KEY_PREFIX}[redacted]`)
    : line;
}

/**
 * A JSON logger at `level` writing to `destination` (default: standard output). It has pino's
 * whole API (`debug` included), which the app's `Logger` is a part of.
 */
export function createLogger(
  level: Config["LOG_LEVEL"],
  destination?: DestinationStream,
): PinoLogger {
  const options = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: REDACT,
    hooks: { streamWrite: maskKeys },
  };
  return destination ? pino(options, destination) : pino(options);
}
