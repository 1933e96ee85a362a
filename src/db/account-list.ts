/** What a list of one account's rows (its grants, its reservations) is asked for. */
export interface AccountListOptions {
  /** Only the rows active at `nowMs` (each list says what active is). */
  activeOnly: boolean;
  /** The page: at most `limit` rows, from the `offset`-th on. */
  limit: number;
  offset: number;
  /** The time that decides what is active, epoch ms. */
  nowMs: number;
}
