/**
 * The prices the plain charge last read, per project and model (docs/design.md#usage-charges): a
 * guess, never trusted. The plain charge checks the guess against the `models` and `projects`
 * rows in the statement that debits (PostgreSQL's one statement; SQLite's balance move) and
 * debits only when they are equal (usage/plain-charge.ts); when they differ it changes nothing,
 * the guess is forgotten and the general path reads the prices anew. So a price changed by any
 * process is charged from the first statement that sees the change, and the guess only saves
 * the read: a round trip on PostgreSQL, a statement on SQLite. Only prices with a credit price
 * are kept (a project without one takes the general path, which answers its 400).
 */
import type { PriceRow } from "./charge.ts";

/** Most guesses kept; past it they are all dropped (a project uses a few models). */
const MAX_GUESSES = 10_000;

const guesses = new Map<string, PriceRow>();

const keyOf = (projectId: string, modelId: string) => `${projectId}\u0000${modelId}`;

/** The prices last read for model `modelId` in project `projectId`, if any. */
export function guessedPrice(projectId: string, modelId: string): PriceRow | undefined {
  return guesses.get(keyOf(projectId, modelId));
}

/** Keeps `row`, the prices just read for model `modelId` in project `projectId`. */
export function keepPrice(projectId: string, modelId: string, row: PriceRow): void {
  if (guesses.size >= MAX_GUESSES) guesses.clear();
  guesses.set(keyOf(projectId, modelId), row);
}

/** Drops the guess for model `modelId` in project `projectId` (it proved stale). */
export function forgetPrice(projectId: string, modelId: string): void {
  guesses.delete(keyOf(projectId, modelId));
}
