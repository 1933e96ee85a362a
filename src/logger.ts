/**
 * Structured JSON logs (pino), one line per event. API keys, emails and metadata are never
 * passed to the logger; `redact` is a second guard for the header names.
 */
import { pino } from "pino";
import type { Config } from "./config.ts";
import type { Logger } from "./http/context.ts";

/** A JSON logger at `level` writing to standard output. */
export function createLogger(level: Config["LOG_LEVEL"]): Logger {
  return pino({
    level,
    base: undefined,
    redact: ["apiKey", "headers['x-api-key']", "email", "metadata"],
  });
}
