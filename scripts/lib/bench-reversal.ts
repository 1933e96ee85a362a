/**
 * The bench's reversal scenario (docs/benchmarks.md, docs/api.md#reversals): each request
 * reverses in full (`POST /v1/transactions/reverse`, amount 1) one deduction of 1 credit booked
 * before it, never the same one twice. The deductions come from a pool seeded through
 * `POST /v1/batch` (batches of BATCH_SIZE over the bench accounts in turn, so the requests in
 * flight at once reverse deductions of different accounts): enough for the warm-up before it,
 * then, between the warm-up and the measured run, enough for twice the warm-up's rate over the
 * measured seconds (`topUp`). A reversal is a write unit on the general path: it locks the
 * account, reads the original, its earlier reversals and its draws, and gives the credit back
 * to the grant the deduction drew from.
 */
import { ACCOUNTS, BATCH_SIZE, type Requests } from "./bench-kit.ts";

/** What each seeded deduction takes and each reversal gives back, in credits. */
export const REVERSED_AMOUNT = 1;
/** Reversals per second the seeding of the warm-up allows for (far above this machine's). */
const WARMUP_RATE_BOUND = 6000;
/** Seeding batches sent at once. */
const SEED_CONCURRENCY = 4;

/** The deductions to reverse, taken in order by the scenario's requests. */
export interface ReversalPool {
  /** Transaction ids of the seeded deductions. */
  ids: string[];
  /** The next id to reverse (how many requests have taken one). */
  next: number;
  /** Seeding batches sent (each of BATCH_SIZE deductions, all committed). */
  batches: number;
  /** Requests made after the pool ran out (they name no transaction: 404). */
  exhausted: number;
}

const json = (body: unknown) => JSON.stringify(body);

/** An empty pool. */
export function reversalPool(): ReversalPool {
  return { ids: [], next: 0, batches: 0, exhausted: 0 };
}

/**
 * Books at least `count` deductions of REVERSED_AMOUNT through the service at `base`, in whole
 * batches of BATCH_SIZE, and adds their ids to `pool`; the deduction `i` of the pool is on the
 * bench account `i mod ACCOUNTS`.
 * @throws when a batch does not commit every deduction
 */
export async function seedDeductions(
  base: string,
  apiKey: string,
  pool: ReversalPool,
  count: number,
): Promise<void> {
  const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
  const batches = Math.ceil(count / BATCH_SIZE);
  const batch = async () => {
    const first = pool.batches++ * BATCH_SIZE;
    const operations = Array.from({ length: BATCH_SIZE }, (_, k) => ({
      path: "/v1/accounts/credits/deduct",
      body: { accountId: `bench-${(first + k) % ACCOUNTS}`, amount: REVERSED_AMOUNT },
    }));
    const r = await fetch(`${base}/v1/batch`, {
      method: "POST",
      headers,
      body: json({ operations }),
    });
    if (!r.ok) throw new Error(`/v1/batch ${r.status}: ${await r.text()}`);
    const done = (await r.json()) as {
      committed: number;
      results: { body: { transactionId?: string } }[];
    };
    if (done.committed !== BATCH_SIZE) throw new Error(`seed batch committed ${done.committed}`);
    return done.results.map((result) => String(result.body.transactionId));
  };
  for (let sent = 0; sent < batches; sent += SEED_CONCURRENCY) {
    const ids = await Promise.all(
      Array.from({ length: Math.min(SEED_CONCURRENCY, batches - sent) }, batch),
    );
    pool.ids.push(...ids.flat());
  }
}

/** Seeds `pool` for a warm-up of `seconds`. */
export function seedForWarmup(
  base: string,
  apiKey: string,
  pool: ReversalPool,
  seconds: number,
): Promise<void> {
  return seedDeductions(base, apiKey, pool, seconds * WARMUP_RATE_BOUND);
}

/**
 * After a warm-up of `warmupSeconds`: seeds `pool` so that what is left holds twice the
 * warm-up's rate (requests sent per second) over `seconds`.
 */
export async function topUp(
  base: string,
  apiKey: string,
  pool: ReversalPool,
  warmupSeconds: number,
  seconds: number,
): Promise<void> {
  // Requests past the end named no deduction: the run goes on from the first id seeded now.
  pool.next = Math.min(pool.next, pool.ids.length);
  const rate = pool.next / warmupSeconds;
  const needed = Math.ceil(2 * rate * seconds) - (pool.ids.length - pool.next);
  if (needed > 0) await seedDeductions(base, apiKey, pool, needed);
}

/** The reversal in full of the pool's next deduction. */
export function reversal(pool: ReversalPool): Requests {
  return [
    {
      method: "POST",
      path: "/v1/transactions/reverse",
      setupRequest: (req) => {
        const transactionId = pool.ids[pool.next++];
        if (transactionId === undefined) pool.exhausted++;
        return {
          ...req,
          body: json({ transactionId: transactionId ?? "txn_none", amount: REVERSED_AMOUNT }),
        };
      },
    },
  ];
}
