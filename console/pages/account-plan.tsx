/**
 * An account's plan assignment (`GET /v1/accounts/plans?accountId=`): the active one with its
 * next grant (when, and how many credits), and the earlier ones below it.
 */
import { call } from "../api.ts";
import { Amount, type Column, DataTable, Status, useLoad, When } from "../components.tsx";
import type { AccountPlan } from "../types.ts";

function ActivePlan({ assignment }: { assignment: AccountPlan }) {
  return (
    <dl class="facts">
      <div>
        <dt>Plan</dt>
        <dd>
          <a href="#/plans">{assignment.plan.name}</a>
        </dd>
      </div>
      <div>
        <dt>Next grant</dt>
        <dd>
          {assignment.nextGrantAt ? (
            <>
              <Amount value={assignment.plan.credits} /> credits on{" "}
              <When at={assignment.nextGrantAt} />
            </>
          ) : (
            "none"
          )}
        </dd>
      </div>
      <div>
        <dt>Grants made</dt>
        <dd>
          <Amount value={assignment.grantsMade} />
        </dd>
      </div>
      <div>
        <dt>Since</dt>
        <dd>
          <When at={assignment.startedAt} />
        </dd>
      </div>
      <div>
        <dt>Ends</dt>
        <dd>{assignment.expiresAt ? <When at={assignment.expiresAt} /> : "never"}</dd>
      </div>
    </dl>
  );
}

const earlierColumns: Column<AccountPlan>[] = [
  { label: "Plan", cell: (a) => a.plan.name },
  { label: "Since", cell: (a) => <When at={a.startedAt} /> },
  { label: "Ended", cell: (a) => <When at={a.cancelledAt ?? a.expiresAt} /> },
  { label: "Grants made", end: true, cell: (a) => <Amount value={a.grantsMade} /> },
];

function Earlier({ assignments }: { assignments: AccountPlan[] }) {
  return (
    <details>
      <summary>Earlier assignments ({assignments.length})</summary>
      <DataTable
        label="Earlier plan assignments"
        columns={earlierColumns}
        rows={assignments}
        rowKey={(a) => a.id}
      />
    </details>
  );
}

export function PlanSection({ accountId, version }: { accountId: string; version: number }) {
  const loaded = useLoad(
    () => call<{ plans: AccountPlan[] }>("GET", "v1/accounts/plans", { query: { accountId } }),
    [accountId, version],
  );
  const all = loaded.data?.plans ?? [];
  const active = all.filter((a) => a.active);
  const earlier = all.filter((a) => !a.active);
  return (
    <section aria-labelledby="plan">
      <h2 id="plan">Plan</h2>
      <Status loaded={loaded} />
      {loaded.data && active.length === 0 && <p class="muted">No active plan.</p>}
      {active.map((a) => (
        <ActivePlan key={a.id} assignment={a} />
      ))}
      {earlier.length > 0 && <Earlier assignments={earlier} />}
    </section>
  );
}
