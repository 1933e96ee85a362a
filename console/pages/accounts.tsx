/**
 * Accounts: the project's accounts (`GET /v1/accounts`, with `search` and paging) and the
 * balance view of each (`GET /v1/accounts/balance`): externalId, name, balance, reserved,
 * available.
 */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, type Column, DataTable, Pager, Status, useLoad } from "../components.tsx";
import type { Account, AccountList, Balance } from "../types.ts";

const PAGE = 20;

async function loadAccounts(search: string, offset: number) {
  const list = await call<AccountList>("GET", "v1/accounts", {
    query: { limit: PAGE, offset, search: search === "" ? undefined : search },
  });
  const balances = await Promise.all(
    list.accounts.map((a) =>
      call<Balance>("GET", "v1/accounts/balance", { query: { accountId: a.id } }),
    ),
  );
  return { list, balances };
}

interface Row {
  account: Account;
  balance: Balance | undefined;
}

const columns: Column<Row>[] = [
  {
    label: "External id",
    cell: (r) => (
      <a href={`#/accounts/${encodeURIComponent(r.account.id)}`}>{r.account.externalId}</a>
    ),
  },
  { label: "Name", cell: (r) => r.account.name },
  { label: "Balance", end: true, cell: (r) => <Amount value={r.balance?.balance} /> },
  { label: "Reserved", end: true, cell: (r) => <Amount value={r.balance?.reserved} /> },
  { label: "Available", end: true, cell: (r) => <Amount value={r.balance?.available} /> },
];

export function AccountsPage() {
  const [search, setSearch] = useState("");
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(() => loadAccounts(search, offset), [search, offset]);

  const submit = (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const input = form.elements.namedItem("search") as HTMLInputElement;
    setSearch(input.value.trim());
    setOffset(0);
  };

  const rows = loaded.data;
  return (
    <main>
      <h1>Accounts</h1>
      <form class="inline" onSubmit={submit}>
        <label for="account-search">Search by externalId or name</label>
        <input id="account-search" name="search" type="search" value={search} />
        <button type="submit">Search</button>
      </form>
      <Status loaded={loaded} />
      {rows && (
        <>
          <DataTable
            label="Accounts"
            columns={columns}
            rows={rows.list.accounts.map((account, i) => ({ account, balance: rows.balances[i] }))}
            rowKey={(r) => r.account.id}
          />
          {rows.list.accounts.length === 0 && (
            <p class="muted">{search ? `No account matches “${search}”.` : "No accounts yet."}</p>
          )}
          <Pager
            label="Accounts"
            pagination={rows.list.pagination}
            shown={rows.list.accounts.length}
            onOffset={setOffset}
          />
        </>
      )}
    </main>
  );
}
