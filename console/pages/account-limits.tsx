/**
 * An account's spend limits (docs/api.md#spend-limits): each limit's current window with what
 * it spent, holds and has left, and when it resets, from `GET /v1/accounts/limits`.
 */
import { call } from "../api.ts";
import { Amount, type Column, DataTable, Status, useLoad, When, Word } from "../components.tsx";
import type { SpendLimits, SpendLimitWindow } from "../types.ts";

const columns: Column<SpendLimitWindow>[] = [
  {
    label: "Period",
    cell: (l) => (
      <>
        <Word>{l.period}</Word>
        {l.soft && <span class="badge"> soft</span>}
      </>
    ),
  },
  { label: "Time zone", cell: (l) => <Word>{l.timeZone}</Word> },
  { label: "Limit", end: true, cell: (l) => <Amount value={l.amount} /> },
  { label: "Spent", end: true, cell: (l) => <Amount value={l.spent} /> },
  { label: "Held", end: true, cell: (l) => <Amount value={l.held} /> },
  { label: "Remaining", end: true, cell: (l) => <Amount value={l.remaining} /> },
  { label: "Window from", cell: (l) => <When at={l.windowStart} /> },
  { label: "Resets", cell: (l) => <When at={l.resetsAt} /> },
];

export function LimitsSection({ accountId, version }: { accountId: string; version: number }) {
  const loaded = useLoad(
    () => call<SpendLimits>("GET", "v1/accounts/limits", { query: { accountId } }),
    [accountId, version],
  );
  const limits = loaded.data?.limits ?? [];
  return (
    <section aria-labelledby="limits">
      <h2 id="limits">Spend limits</h2>
      <Status loaded={loaded} />
      {loaded.data && limits.length === 0 && <p class="muted">No spend limits.</p>}
      {loaded.data && limits.length > 0 && (
        <p>
          Spendable now: <Amount value={loaded.data.spendable} />
        </p>
      )}
      {limits.length > 0 && (
        <DataTable
          label="Spend limits"
          columns={columns}
          rows={limits}
          rowKey={(l) => `${l.period} ${l.timeZone} ${String(l.amount)} ${l.soft}`}
        />
      )}
    </section>
  );
}
