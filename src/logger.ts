/**
 * Structured JSON logs (pino), one line per event. API keys, emails and metadata are never
 * passed to the logger; `redact` is a second guard for the field and header names.
 */
import { type DestinationStream, pino } from "pino";
import type { Config } from "./config.ts";
import type { Logger } from "./http/context.ts";

const REDACT = [
  "apiKey",
  "*.apiKey",
  "headers['x-api-key']",
  "*.headers['x-api-key']",
  "headers.authorization",
  "*.headers.authorization",
  "email",
  "*.email",
  "metadata",
  "*.metadata",
];

/** A JSON logger at `level` writing to `destination` (default: standard output). */
export function createLogger(level: Config["LOG_LEVEL"], destination?: DestinationStream): Logger {
  const options = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: REDACT,
  };
  return destination ? pino(options, destination) : pino(options);
}
