/**
 * LLM usage of the last 30 days (today included, UTC), of one account or, without `accountId`,
 * of the whole project (the overview): the cost by day as a chart
 * (`GET /v1/usage?summary=true&groupBy=day`), with the same figures in a table, and by model as
 * a table (`groupBy=model`).
 */
import { call, int } from "../api.ts";
import { Amount, Status, useLoad } from "../components.tsx";
import { DayChart, type DayPoint } from "../day-chart.tsx";
import type { UsageSummary } from "../types.ts";

const DAYS = 30;
const DAY_MS = 86_400_000;

/** The 30 days ending today, as `YYYY-MM-DD`, oldest first. */
function lastDays(nowMs: number): string[] {
  const today = Math.floor(nowMs / DAY_MS);
  return Array.from({ length: DAYS }, (_, i) =>
    new Date((today - DAYS + 1 + i) * DAY_MS).toISOString().slice(0, 10),
  );
}

async function loadUsage(accountId: string | undefined) {
  const days = lastDays(Date.now());
  const query = { accountId, summary: true, startDate: days[0] };
  const [byDay, byModel] = await Promise.all(
    (["day", "model"] as const).map((groupBy) =>
      call<{ summary: UsageSummary }>("GET", "v1/usage", { query: { ...query, groupBy } }),
    ),
  );
  return { days, byDay: byDay?.summary, byModel: byModel?.summary };
}

export function UsageSection({ accountId }: { accountId?: string }) {
  const loaded = useLoad(() => loadUsage(accountId), [accountId]);
  const data = loaded.data;
  const groups = new Map((data?.byDay?.groups ?? []).map((g) => [g.key, g]));
  const points: DayPoint[] = (data?.days ?? []).map((day) => {
    const g = groups.get(day);
    return { day, cost: g ? String(g.costUsd) : "0", requests: g ? int(g.requestCount) : 0 };
  });
  const models = data?.byModel?.groups ?? [];
  return (
    <section aria-labelledby="usage">
      <h2 id="usage">Usage, last 30 days</h2>
      <Status loaded={loaded} />
      {data && (
        <>
          <p>
            Total cost: <Amount value={data.byDay?.totalCostUsd} /> USD
          </p>
          <DayChart points={points} label="Cost per day, USD" />
          <details>
            <summary>Usage by day as a table</summary>
            <table>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                  <th scope="col" class="num">
                    Cost (USD)
                  </th>
                </tr>
              </thead>
              <tbody>
                {points.map((p) => (
                  <tr key={p.day}>
                    <td>{p.day}</td>
                    <td class="num">{p.requests}</td>
                    <td class="num">{p.cost}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </details>
          <h3>By model</h3>
          {models.length === 0 ? (
            <p class="muted">No usage in the last 30 days.</p>
          ) : (
            <table aria-label="Usage by model, last 30 days">
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  <th scope="col" class="num">
                    Requests
                  </th>
                  <th scope="col" class="num">
                    Input tokens
                  </th>
                  <th scope="col" class="num">
                    Cached tokens
                  </th>
                  <th scope="col" class="num">
                    Output tokens
                  </th>
                  <th scope="col" class="num">
                    Cost (USD)
                  </th>
                </tr>
              </thead>
              <tbody>
                {models.map((g) => (
                  <tr key={g.key ?? ""}>
                    <td>{g.key}</td>
                    <td class="num">
                      <Amount value={g.requestCount} />
                    </td>
                    <td class="num">
                      <Amount value={g.inputTokens} />
                    </td>
                    <td class="num">
                      <Amount value={g.cachedTokens} />
                    </td>
                    <td class="num">
                      <Amount value={g.outputTokens} />
                    </td>
                    <td class="num">
                      <Amount value={g.costUsd} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}
