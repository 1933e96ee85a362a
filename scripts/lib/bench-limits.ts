/**
 * The bench's spend limit scenario (docs/benchmarks.md, docs/api.md#spend-limits): deductions
 * on accounts with three limits each (hour, day and month, far above what the run spends, so
 * nothing is refused), after 100,000 earlier debits in the current windows. The accounts
 * `limited-0` … `limited-999` are funded, take those debits through `POST /v1/batch` (100
 * batches of 1,000 deductions of 0.5), then get their limits by `POST /v1/accounts/update`,
 * which builds each account's window counters from its ledger rows once; every deduction of the
 * scenario then reads and updates its three counters, never the window's rows.
 */
import type { Requests } from "./bench-kit.ts";

/** Accounts with limits. */
export const LIMITED_ACCOUNTS = 1000;
/** Debits booked on them before the scenario, all in the current windows. */
export const EARLIER_DEBITS = 100_000;
/** Deductions per seeding batch. */
export const SEED_BATCH = 1000;

const json = (body: unknown) => JSON.stringify(body);
const limited = () => `limited-${Math.floor(Math.random() * LIMITED_ACCOUNTS)}`;

/** The three limits of each account: hour, day (Europe/Paris) and month, none reached. */
export const THREE_LIMITS = [
  { period: "hour", amount: 500_000 },
  { period: "day", amount: 600_000, timeZone: "Europe/Paris" },
  { period: "month", amount: 700_000 },
];

/**
 * Creates and funds the limited accounts through the service at `base`, books
 * EARLIER_DEBITS deductions on them in batches, then sets their limits.
 * @returns the requests answered 200 by route, for the bench's row count
 */
export async function seedLimited(base: string, apiKey: string) {
  const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
  const post = async (path: string, body: unknown) => {
    const r = await fetch(base + path, { method: "POST", headers, body: json(body) });
    if (!r.ok) throw new Error(`${path} ${r.status}: ${await r.text()}`);
    return r.json() as Promise<{ committed?: number }>;
  };
  const ids = Array.from({ length: LIMITED_ACCOUNTS }, (_, i) => `limited-${i}`);
  for (let i = 0; i < ids.length; i += 50) {
    await Promise.all(
      ids.slice(i, i + 50).map(async (externalId) => {
        await post("/v1/accounts/create", { externalId });
        await post("/v1/accounts/credits/add", { accountId: externalId, amount: 1_000_000 });
      }),
    );
  }
  for (let b = 0; b < EARLIER_DEBITS / SEED_BATCH; b += 4) {
    await Promise.all(
      Array.from({ length: 4 }, async (_, k) => {
        const operations = Array.from({ length: SEED_BATCH }, (_, j) => ({
          path: "/v1/accounts/credits/deduct",
          body: { accountId: ids[((b + k) * SEED_BATCH + j) % ids.length], amount: 0.5 },
        }));
        const done = await post("/v1/batch", { operations });
        if (done.committed !== SEED_BATCH)
          throw new Error(`seed batch committed ${done.committed}`);
      }),
    );
  }
  for (let i = 0; i < ids.length; i += 50) {
    await Promise.all(
      ids
        .slice(i, i + 50)
        .map((accountId) => post("/v1/accounts/update", { accountId, spendLimits: THREE_LIMITS })),
    );
  }
  return { adds: ids.length, batches: EARLIER_DEBITS / SEED_BATCH };
}

/** A deduction of 0.5 credits from a random limited account. */
export const limitedDeduct: Requests = [
  {
    method: "POST",
    path: "/v1/accounts/credits/deduct",
    setupRequest: (req) => ({ ...req, body: json({ accountId: limited(), amount: 0.5 }) }),
  },
];
