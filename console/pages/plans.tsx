/**
 * Plans: the project's plans (`GET /v1/plans`): credits per grant, interval, number of grants,
 * whether leftovers roll over, price and status. Read-only: plans are made and archived through
 * the API (docs/api.md#plans-and-grants).
 */
import { call } from "../api.ts";
import { Amount, Status, useLoad, When } from "../components.tsx";
import type { Plan } from "../types.ts";

const INTERVAL: Record<Plan["interval"], string> = {
  "1d": "every day",
  week: "every week",
  month: "every month",
};

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
        <div class="scroll">
          <table aria-label="Plans">
            <thead>
              <tr>
                <th scope="col">Plan</th>
                <th scope="col" class="num">
                  Credits per grant
                </th>
                <th scope="col">Interval</th>
                <th scope="col" class="num">
                  Grants
                </th>
                <th scope="col">Leftovers</th>
                <th scope="col" class="num">
                  Price
                </th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {plans.map((p) => (
                <tr key={p.id}>
                  <td>
                    <strong>{p.name}</strong>
                    {p.description && <div class="muted">{p.description}</div>}
                    <div>
                      <code>{p.id}</code>
                    </div>
                  </td>
                  <td class="num">
                    <Amount value={p.credits} />
                  </td>
                  <td>{INTERVAL[p.interval]}</td>
                  <td class="num">
                    {p.occurrences === null ? "unlimited" : <Amount value={p.occurrences} />}
                  </td>
                  <td>{p.accumulate ? "roll over" : "expire each period"}</td>
                  <td class="num">
                    <Amount value={p.price} /> / {p.billingPeriod}
                  </td>
                  <td>
                    <span class={`badge ${p.isActive ? "active" : "archived"}`}>
                      {p.isActive ? "active" : "archived"}
                    </span>
                  </td>
                  <td>
                    <When at={p.createdAt} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
