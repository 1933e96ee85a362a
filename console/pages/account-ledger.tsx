/**
 * The account's ledger (`GET /v1/transactions`): newest first, 20 to a page, within an optional
 * date range (both days included, UTC).
 */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, Pager, Status, useLoad, When } from "../components.tsx";
import type { Pagination, Transaction } from "../types.ts";

const PAGE = 20;

interface Range {
  startDate: string;
  endDate: string;
}

export function LedgerSection({ accountId, version }: { accountId: string; version: number }) {
  const [range, setRange] = useState<Range>({ startDate: "", endDate: "" });
  const [offset, setOffset] = useState(0);
  const loaded = useLoad(
    () =>
      call<{ items: Transaction[]; pagination: Pagination }>("GET", "v1/transactions", {
        query: {
          accountId,
          limit: PAGE,
          offset,
          startDate: range.startDate || undefined,
          endDate: range.endDate || undefined,
        },
      }),
    [accountId, offset, range.startDate, range.endDate, version],
  );

  const apply = (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value;
    setRange({ startDate: value("startDate"), endDate: value("endDate") });
    setOffset(0);
  };

  const items = loaded.data?.items ?? [];
  return (
    <section aria-labelledby="ledger">
      <h2 id="ledger">Ledger</h2>
      <form class="inline" onSubmit={apply} aria-label="Ledger dates">
        <label for="ledger-from">From</label>
        <input id="ledger-from" name="startDate" type="date" value={range.startDate} />
        <label for="ledger-to">To</label>
        <input id="ledger-to" name="endDate" type="date" value={range.endDate} />
        <button type="submit">Show</button>
      </form>
      <Status loaded={loaded} />
      {loaded.data && items.length === 0 && <p class="muted">No transactions.</p>}
      {items.length > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Date</th>
              <th scope="col">Type</th>
              <th scope="col" class="num">
                Amount
              </th>
              <th scope="col" class="num">
                Balance after
              </th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {items.map((t) => (
              <tr key={t.id}>
                <td>
                  <When at={t.createdAt} />
                </td>
                <td>
                  <span class={`badge ${t.type}`}>{t.type}</span>
                </td>
                <td class="num">
                  {t.type === "debit" ? "−" : "+"}
                  <Amount value={t.amount} />
                </td>
                <td class="num">
                  <Amount value={t.balanceAfter} />
                </td>
                <td>{t.description}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager
        label="Ledger"
        pagination={loaded.data?.pagination}
        shown={items.length}
        onOffset={setOffset}
      />
    </section>
  );
}
