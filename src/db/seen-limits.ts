/**
 * What the plain paths last read of accounts' spend limits (docs/design.md#plain-writes), kept by
 * each write path, so per app: a guess of which plain statement to try for an account (none, or
 * the limited one for a limits text). The statement compares the guess with the limits stored in
 * the account's row; when they differ it changes nothing and the stored text is read in the same
 * unit (SQLite) or answered by the same call (PostgreSQL), remembered here, and tried. A guess
 * never decides the outcome of a write, only how many statements reach it.
 */

/** An app's guesses of its accounts' limits texts, by project and account reference. */
export class SeenLimits {
  readonly #texts = new Map<string, string>();
  static readonly MAX = 100_000;

  /** The limits text last read for the account `ref` names (internal id or externalId), if any. */
  get(projectId: string, ref: string): string | undefined {
    return this.#texts.size === 0 ? undefined : this.#texts.get(`${projectId} ${ref}`);
  }

  /** Records `text` (null: no limits) as read for the account under each of its `refs`. */
  set(projectId: string, refs: readonly string[], text: string | null): void {
    if (text === null) {
      if (this.#texts.size === 0) return;
      for (const ref of refs) this.#texts.delete(`${projectId} ${ref}`);
      return;
    }
    if (this.#texts.size >= SeenLimits.MAX) this.#texts.clear();
    for (const ref of refs) this.#texts.set(`${projectId} ${ref}`, text);
  }
}
