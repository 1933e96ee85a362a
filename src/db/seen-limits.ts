/**
 * What the plain paths last read of accounts' spend limits (docs/design.md#plain-writes), kept by
 * each write path, so per app: a guess of which plain statement to try for an account (none, the
 * limited one for a limits text, or for an account in a tree the member debit for the limits
 * texts of its path). The statement compares the guess with what is stored in the accounts'
 * rows; when they differ it changes nothing and the stored texts are read in the same unit
 * (SQLite) or answered by the same call (PostgreSQL), remembered here, and tried. A guess never
 * decides the outcome of a write, only how many statements reach it.
 */

/**
 * The guess for an account in a tree (docs/design.md#pools-and-members): the limits text of
 * each level of its path, spender first and root last (null: none). An empty path: the account
 * is known to be in a tree, its path's limits not yet read.
 */
export interface TreeGuess {
  readonly path: readonly (string | null)[];
}

/** The guess for an account known to be in a tree whose path's limits are not yet read. */
export const IN_TREE: TreeGuess = { path: [] };

/** A guess of an account's limits: its limits text, or its path's when it is in a tree. */
export type LimitsGuess = string | TreeGuess;

/** Whether two guesses (undefined or null: no limits, in no tree) are the same. */
export function sameGuess(
  a: LimitsGuess | null | undefined,
  b: LimitsGuess | null | undefined,
): boolean {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) {
    return (a ?? null) === (b ?? null);
  }
  return a.path.length === b.path.length && a.path.every((text, i) => text === b.path[i]);
}

/** An app's guesses of its accounts' limits, by project and account reference. */
export class SeenLimits {
  readonly #guesses = new Map<string, LimitsGuess>();
  static readonly MAX = 100_000;

  /** The guess last recorded for the account `ref` names (internal id or externalId), if any. */
  get(projectId: string, ref: string): LimitsGuess | undefined {
    return this.#guesses.size === 0 ? undefined : this.#guesses.get(`${projectId} ${ref}`);
  }

  /** Records `guess` (null: no limits, in no tree) for the account under each of its `refs`. */
  set(projectId: string, refs: readonly string[], guess: LimitsGuess | null): void {
    if (guess === null) {
      if (this.#guesses.size === 0) return;
      for (const ref of refs) this.#guesses.delete(`${projectId} ${ref}`);
      return;
    }
    if (this.#guesses.size >= SeenLimits.MAX) this.#guesses.clear();
    for (const ref of refs) this.#guesses.set(`${projectId} ${ref}`, guess);
  }
}
