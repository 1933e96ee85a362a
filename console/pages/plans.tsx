/**
 * Plans: the project's plans (`GET /v1/plans`): credits per grant, interval, number of grants,
 * whether leftovers roll over, price and status. Read-only: plans are made and archived through
 * the API (docs/api.md#plans-and-grants).
 */
import { call } from "../api.ts";
import { Amount, type Column, DataTable, Status, useLoad, When, Word } from "../components.tsx";
import type { Plan } from "../types.ts";

const INTERVAL: Record<Plan["interval"], string> = {
  "1d": "every day",
  week: "every week",
  month: "every month",
};

const columns: Column<Plan>[] = [
  {
    label: "Plan",
    cell: (p) => (
      <>
        <strong>{p.name}</strong>
        {p.description && <div class="muted">{p.description}</div>}
        <div>
          <code>{p.id}</code>
        </div>
      </>
    ),
  },
  { label: "Credits per grant", end: true, cell: (p) => <Amount value={p.credits} /> },
  { label: "Interval", cell: (p) => <Word>{INTERVAL[p.interval]}</Word> },
  {
    label: "Grants",
    end: true,
    cell: (p) =>
      p.occurrences === null ? <Word>unlimited</Word> : <Amount value={p.occurrences} />,
  },
  { label: "Leftovers", cell: (p) => (p.accumulate ? "roll over" : "expire each period") },
  {
    label: "Price",
    end: true,
    // The period is the plan's own text (up to 255 characters): it may wrap, the price not.
    cell: (p) => (
      <>
        <Amount value={p.price} /> / {p.billingPeriod}
      </>
    ),
  },
  {
    label: "Status",
    cell: (p) => (
      <span class={`badge ${p.isActive ? "active" : "archived"}`}>
        {p.isActive ? "active" : "archived"}
      </span>
    ),
  },
  { label: "Created", cell: (p) => <When at={p.createdAt} /> },
];

export function PlansPage() {
  const loaded = useLoad(() => call<{ plans: Plan[] }>("GET", "v1/plans"), []);
  const plans = loaded.data?.plans ?? [];
  return (
    <main>
      <h1>Plans</h1>
      <p class="muted">
        Recurring credit grants. Assign a plan to an account through the API; its page shows the
        assignment and the next grant.
      </p>
      <Status loaded={loaded} />
      {loaded.data && plans.length === 0 && <p class="muted">No plans yet.</p>}
      {plans.length > 0 && (
        <DataTable label="Plans" columns={columns} rows={plans} rowKey={(p) => p.id} />
      )}
    </main>
  );
}
