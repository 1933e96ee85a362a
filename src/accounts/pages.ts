/**
 * The page of one account's grants or reservations (docs/api.md#grant-list): the list routes
 * that name an account by `accountId` or `externalId` and may keep only the active rows.
 */
import type { Kysely } from "kysely";
import type { AccountListOptions } from "../db/account-list.ts";
import type { DB } from "../db/schema.ts";
import type { AppDeps } from "../http/context.ts";
import { type Page, paged } from "../http/handlers.ts";
import { resolveAccount } from "./service.ts";

/** The query of an account's list of grants or reservations. */
interface AccountPageQuery extends Page {
  accountId?: string | undefined;
  externalId?: string | undefined;
  activeOnly?: boolean | undefined;
}

/**
 * One page of the grants or reservations of the account a query names (`accountId` or
 * `externalId`), only the active ones with `activeOnly` (default false), as of the clock's now
 * (docs/api.md#grant-list).
 * @param list reads a page of the account's rows and how many there are
 * @returns the rows, the list's `pagination` and `nowMs`, the time they were read at
 * @throws ApiError ACCOUNT_NOT_FOUND, VALIDATION_ERROR (the two ids name different accounts)
 */
export async function accountPage<T>(
  deps: AppDeps,
  projectId: string,
  query: AccountPageQuery,
  list: (
    db: Kysely<DB>,
    accountId: string,
    options: AccountListOptions,
  ) => Promise<{ rows: T[]; totalCount: number }>,
) {
  const account = await resolveAccount(deps.db.read, projectId, query);
  const nowMs = deps.clock();
  const activeOnly = query.activeOnly ?? false;
  const { rows, pagination } = await paged(query, (page) =>
    list(deps.db.read, account.id, { activeOnly, ...page, nowMs }),
  );
  return { rows, pagination, nowMs };
}
