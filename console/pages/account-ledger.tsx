/**
 * The account's ledger (`GET /v1/transactions`): newest first, 20 to a page, within an optional
 * date range (both days included, UTC).
 */
import { useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, type Column, DataTable, Pager, Status, useLoad, When } from "../components.tsx";
import type { Pagination, Transaction } from "../types.ts";

const PAGE = 20;

interface Range {
  startDate: string;
  endDate: string;
}

const columns: Column<Transaction>[] = [
  { label: "Date", cell: (t) => <When at={t.createdAt} /> },
  { label: "Type", cell: (t) => <span class={`badge ${t.type}`}>{t.type}</span> },
  {
    label: "Amount",
    end: true,
    cell: (t) => <Amount value={t.amount} sign={t.type === "debit" ? "−" : "+"} />,
  },
  { label: "Balance after", end: true, cell: (t) => <Amount value={t.balanceAfter} /> },
  { label: "Description", cell: (t) => t.description },
];

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
        <DataTable label="Ledger" columns={columns} rows={items} rowKey={(t) => t.id} />
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
