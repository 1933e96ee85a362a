/**
 * Links to an account of the project by its id (a parent, a pool, a ledger entry's
 * `onBehalfOf`; docs/api.md#pools-and-members), shown by its `externalId` once read with
 * `GET /v1/accounts/get`.
 */
import { call } from "../api.ts";
import { useLoad } from "../components.tsx";
import type { Account } from "../types.ts";

/** The console's address of an account's page. */
export function accountHref(accountId: string): string {
  return `#/accounts/${encodeURIComponent(accountId)}`;
}

/**
 * The `externalId` of each account id read so far. An account's `externalId` never changes
 * (`POST /v1/accounts/update` cannot change it), so one read serves every link to it: a pool's
 * ledger names the same member on many rows.
 */
const externalIds = new Map<string, Promise<string>>();

/** Notes the `externalId` of an account the console has read anyway. */
export function rememberAccount(account: Pick<Account, "id" | "externalId">): void {
  externalIds.set(account.id, Promise.resolve(account.externalId));
}

/** The `externalId` of account `id`. @throws ApiError when it cannot be read (then read again) */
function externalIdOf(id: string): Promise<string> {
  const known = externalIds.get(id);
  if (known) return known;
  const read = call<Account>("GET", "v1/accounts/get", { query: { accountId: id } }).then(
    (account) => account.externalId,
  );
  externalIds.set(id, read);
  read.catch(() => externalIds.delete(id));
  return read;
}

/** A link to account `id`'s page, named by its `externalId` (its id until that is read). */
export function AccountLink({ id }: { id: string }) {
  const loaded = useLoad(() => externalIdOf(id), [id]);
  return (
    <a href={accountHref(id)} title={id}>
      {loaded.data ?? <code>{id}</code>}
    </a>
  );
}
