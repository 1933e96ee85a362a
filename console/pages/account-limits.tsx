/**
 * An account's spend limits (docs/api.md#spend-limits): each limit's current window with what
 * it spent, holds and has left, and when it resets, from `GET /v1/accounts/limits`.
 */
import { call } from "../api.ts";
import { Amount, Status, useLoad, When } from "../components.tsx";
import type { SpendLimits } from "../types.ts";

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
        <table>
          <thead>
            <tr>
              <th scope="col">Period</th>
              <th scope="col">Time zone</th>
              <th scope="col" class="num">
                Limit
              </th>
              <th scope="col" class="num">
                Spent
              </th>
              <th scope="col" class="num">
                Held
              </th>
              <th scope="col" class="num">
                Remaining
              </th>
              <th scope="col">Window from</th>
              <th scope="col">Resets</th>
            </tr>
          </thead>
          <tbody>
            {limits.map((l) => (
              <tr key={`${l.period} ${l.timeZone} ${String(l.amount)} ${l.soft}`}>
                <td>
                  {l.period}
                  {l.soft && <span class="badge"> soft</span>}
                </td>
                <td>{l.timeZone}</td>
                <td class="num">
                  <Amount value={l.amount} />
                </td>
                <td class="num">
                  <Amount value={l.spent} />
                </td>
                <td class="num">
                  <Amount value={l.held} />
                </td>
                <td class="num">
                  <Amount value={l.remaining} />
                </td>
                <td>
                  <When at={l.windowStart} />
                </td>
                <td>
                  <When at={l.resetsAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
