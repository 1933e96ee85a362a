/**
 * An account's place among accounts (docs/api.md#pools-and-members, contract section 24): its
 * parent (or none: a root), who pays its debits (itself, or its pool: the nearest account above
 * it that funds itself, `fundedBy`), and its children (`GET /v1/accounts?parentId=`), paged.
 */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Pager, Status, useLoad } from "../components.tsx";
import type { Account, AccountList } from "../types.ts";
import { AccountLink, accountHref, rememberAccount } from "./account-links.tsx";

const PAGE = 50;

/** Whether `account` is a member whose pool holds its credits. */
export function fundedByPool(account: Pick<Account, "id" | "fundedBy">): boolean {
  return account.fundedBy !== account.id;
}

function Children({ accountId }: { accountId: string }) {
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(async () => {
    const list = await call<AccountList>("GET", "v1/accounts", {
      query: { parentId: accountId, limit: PAGE, offset },
    });
    for (const child of list.accounts) rememberAccount(child);
    return list;
  }, [accountId, offset]);
  const children = loaded.data?.accounts ?? [];
  return (
    <>
      <h3 id="children">Children</h3>
      <Status loaded={loaded} />
      {loaded.data && children.length === 0 && <p class="muted">No children.</p>}
      {children.length > 0 && (
        <ul class="children" aria-labelledby="children">
          {children.map((child) => (
            <li key={child.id}>
              <a href={accountHref(child.id)}>{child.externalId}</a>{" "}
              <span class="muted">
                {child.funding === "parent" ? "funded by its pool" : "funds itself"}
              </span>
            </li>
          ))}
        </ul>
      )}
      {/* Paged only when the children do not fit on one page. */}
      {(offset > 0 || loaded.data?.pagination?.hasMore) && (
        <Pager
          label="Children"
          pagination={loaded.data?.pagination}
          shown={children.length}
          onOffset={setOffset}
        />
      )}
    </>
  );
}

export function TreeSection({ account }: { account: Account }) {
  const member = fundedByPool(account);
  return (
    <section aria-labelledby="tree">
      <h2 id="tree">Parent and children</h2>
      <dl class="facts">
        <div>
          <dt>Parent</dt>
          <dd>
            {account.parentId === null ? "none (a root)" : <AccountLink id={account.parentId} />}
          </dd>
        </div>
        <div>
          <dt>Funded by</dt>
          <dd>{member ? <AccountLink id={account.fundedBy} /> : "itself"}</dd>
        </div>
      </dl>
      {member && (
        <p class="pool">
          Its credits are its pool's: <AccountLink id={account.fundedBy} /> holds them and pays its
          debits, which the pool's ledger books on its behalf. It holds no credits of its own.
        </p>
      )}
      <Children accountId={account.id} />
    </section>
  );
}
