/**
 * The bench's member scenario (docs/benchmarks.md, docs/api.md#pools-and-members): deductions
 * by members of shared pools, two levels with a limit at each. 100 pools `pool-0` … `pool-99`
 * each hold 1,000,000 credits under a day limit far above what the run spends, and each has 10
 * members `member-<pool>-0` … `member-<pool>-9`, funded by their pool, each under an hour limit
 * also never reached. Every deduction of the scenario is in the plain region of the member's
 * debit (docs/design.md#pools-and-members): it locks the member and its pool, reads the holds
 * of the pool's tree, judges both levels' limits, books the debit on the pool on the member's
 * behalf and counts it at both levels, in one call on PostgreSQL and five statements on SQLite.
 */
import type { Requests } from "./bench-kit.ts";

/** Pools, and members in each. */
export const POOLS = 100;
export const MEMBERS_PER_POOL = 10;

const json = (body: unknown) => JSON.stringify(body);
const member = () =>
  `member-${Math.floor(Math.random() * POOLS)}-${Math.floor(Math.random() * MEMBERS_PER_POOL)}`;

/**
 * Creates and funds the pools and their members through the service at `base`.
 * @returns the requests answered 200 that booked a ledger row (the pools' adds)
 */
export async function seedMembers(base: string, apiKey: string): Promise<{ adds: number }> {
  const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
  const post = async (path: string, body: unknown) => {
    const r = await fetch(base + path, { method: "POST", headers, body: json(body) });
    if (!r.ok) throw new Error(`${path} ${r.status}: ${await r.text()}`);
  };
  for (let p = 0; p < POOLS; p += 10) {
    await Promise.all(
      Array.from({ length: 10 }, async (_, k) => {
        const pool = `pool-${p + k}`;
        await post("/v1/accounts/create", {
          externalId: pool,
          spendLimits: [{ period: "day", amount: 900_000 }],
        });
        await post("/v1/accounts/credits/add", { accountId: pool, amount: 1_000_000 });
        for (let m = 0; m < MEMBERS_PER_POOL; m++) {
          await post("/v1/accounts/create", {
            externalId: `member-${p + k}-${m}`,
            parentId: pool,
            spendLimits: [{ period: "hour", amount: 500_000 }],
          });
        }
      }),
    );
  }
  return { adds: POOLS };
}

/** A deduction of 0.5 credits by a random member, booked on its pool. */
export const memberDeduct: Requests = [
  {
    method: "POST",
    path: "/v1/accounts/credits/deduct",
    setupRequest: (req) => ({ ...req, body: json({ accountId: member(), amount: 0.5 }) }),
  },
];
