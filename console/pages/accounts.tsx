/**
 * Accounts: the project's accounts (`GET /v1/accounts`, with `search` and paging) and the
 * balance view of each (`GET /v1/accounts/balance`): externalId, name, balance, reserved,
 * available.
 */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, Pager, Status, useLoad } from "../components.tsx";
import type { AccountList, Balance } from "../types.ts";

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
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">External id</th>
                  <th scope="col">Name</th>
                  <th scope="col" class="num">
                    Balance
                  </th>
                  <th scope="col" class="num">
                    Reserved
                  </th>
                  <th scope="col" class="num">
                    Available
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.list.accounts.map((a, i) => (
                  <tr key={a.id}>
                    <td>
                      <a href={`#/accounts/${encodeURIComponent(a.id)}`}>{a.externalId}</a>
                    </td>
                    <td>{a.name}</td>
                    <td class="num">
                      <Amount value={rows.balances[i]?.balance} />
                    </td>
                    <td class="num">
                      <Amount value={rows.balances[i]?.reserved} />
                    </td>
                    <td class="num">
                      <Amount value={rows.balances[i]?.available} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
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
