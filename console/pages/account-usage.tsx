/**
 * LLM usage of the last 30 days (today included, UTC), of one account or, without `accountId`,
 * of the whole project (the overview): the cost by day as a chart
 * (`GET /v1/usage?summary=true&groupBy=day`), with the same figures in a table, and by model as
 * a table (`groupBy=model`). When the project has a credit price (`GET /v1/project`,
 * `creditsPerUsd`), the credits the usage was charged stand beside its USD cost: each summary's
 * `creditsCharged` less its `creditsReversed` (format.ts).
 */
import { call, int, type Num } from "../api.ts";
import { Amount, type Column, DataTable, ModelId, Status, useLoad } from "../components.tsx";
import { DayChart, type DayPoint } from "../day-chart.tsx";
import { creditsUsed } from "../format.ts";
import type { Project, UsageGroup, UsageSummary } from "../types.ts";

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
  const [byDay, byModel, project] = await Promise.all([
    call<{ summary: UsageSummary }>("GET", "v1/usage", { query: { ...query, groupBy: "day" } }),
    call<{ summary: UsageSummary }>("GET", "v1/usage", { query: { ...query, groupBy: "model" } }),
    call<{ project: Project }>("GET", "v1/project"),
  ]);
  return {
    days,
    byDay: byDay.summary,
    byModel: byModel.summary,
    priced: project.project.creditsPerUsd !== null,
  };
}

/** One day of the table: the API's literals, or 0 for a day without usage. */
interface DayRow extends DayPoint {
  credits: string | undefined;
}

/** The day table's columns, with credits when the project has a credit price. */
function dayColumns(priced: boolean): Column<DayRow>[] {
  const columns: Column<DayRow>[] = [
    { label: "Day", cell: (p) => <time datetime={p.day}>{p.day}</time> },
    { label: "Requests", end: true, cell: (p) => <Amount value={p.requests} /> },
    { label: "Cost (USD)", end: true, cell: (p) => <Amount value={p.cost} /> },
  ];
  if (priced)
    columns.push({ label: "Credits", end: true, cell: (p) => <Amount value={p.credits} /> });
  return columns;
}

/** The model table's columns, with credits when the project has a credit price. */
function modelColumns(priced: boolean): Column<UsageGroup>[] {
  const columns: Column<UsageGroup>[] = [
    { label: "Model", cell: (g) => <ModelId id={g.key} /> },
    { label: "Requests", end: true, cell: (g) => <Amount value={g.requestCount} /> },
    { label: "Input tokens", end: true, cell: (g) => <Amount value={g.inputTokens} /> },
    { label: "Cached tokens", end: true, cell: (g) => <Amount value={g.cachedTokens} /> },
    { label: "Output tokens", end: true, cell: (g) => <Amount value={g.outputTokens} /> },
    { label: "Cost (USD)", end: true, cell: (g) => <Amount value={g.costUsd} /> },
  ];
  if (priced) {
    columns.push({ label: "Credits", end: true, cell: (g) => <Amount value={creditsUsed(g)} /> });
  }
  return columns;
}

/** `Total cost: 1.41 USD`, with `(141 credits)` beside it when the project has a price. */
function Total({ summary, priced }: { summary: UsageSummary; priced: boolean }) {
  const credits = priced ? creditsUsed(summary) : undefined;
  return (
    <p>
      Total cost: <Amount value={summary.totalCostUsd} /> USD
      {credits !== undefined && (
        <>
          {" "}
          (<Amount value={credits} /> credits)
        </>
      )}
    </p>
  );
}

export function UsageSection({ accountId }: { accountId?: string }) {
  const loaded = useLoad(() => loadUsage(accountId), [accountId]);
  const data = loaded.data;
  const groups = new Map((data?.byDay.groups ?? []).map((g) => [g.key, g]));
  const zero = (n: Num | undefined) => (n === undefined ? "0" : String(n));
  const points: DayRow[] = (data?.days ?? []).map((day) => {
    const g = groups.get(day);
    return {
      day,
      cost: zero(g?.costUsd),
      requests: g ? int(g.requestCount) : 0,
      credits: g ? creditsUsed(g) : "0",
    };
  });
  const models = data?.byModel.groups ?? [];
  return (
    <section aria-labelledby="usage">
      <h2 id="usage">Usage, last 30 days</h2>
      <Status loaded={loaded} />
      {data && (
        <>
          <Total summary={data.byDay} priced={data.priced} />
          <DayChart points={points} label="Cost per day, USD" />
          <details>
            <summary>Usage by day as a table</summary>
            <DataTable
              label="Usage by day, last 30 days"
              columns={dayColumns(data.priced)}
              rows={points}
              rowKey={(p) => p.day}
            />
          </details>
          <h3>By model</h3>
          {models.length === 0 ? (
            <p class="muted">No usage in the last 30 days.</p>
          ) : (
            <DataTable
              label="Usage by model, last 30 days"
              columns={modelColumns(data.priced)}
              rows={models}
              rowKey={(g) => g.key ?? ""}
            />
          )}
        </>
      )}
    </section>
  );
}
