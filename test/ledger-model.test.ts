/**
 * The ledger against an exact reference model (test/ledger-model/): seeded random steps over
 * real HTTP on a fake clock, on three accounts with grants of every priority and expiries
 * seconds away, holds with TTLs, confirms below, at and above their hold (by amount or by usage
 * priced in credits), cancels, deductions, manual credits and debits, usage charges, spend
 * limits, low-balance thresholds, atomic and non-atomic batches of all of these, idempotent
 * replays and the expiry jobs. Every answer (status, code, amounts) and, after every step, every
 * account's balance, reserved, available and grants and the `balance.low` events must be exactly
 * the model's; `ledger verify` holds throughout.
 *
 * Size: `LEDGER_MODEL_SEEDS` (`7`, `1,5,9` or `1-50`) and `LEDGER_MODEL_STEPS`; otherwise 3 seeds
 * of 100 steps under `npm run test:fast` (which sets `LEDGER_MODEL_SIZE=fast`) and on remote
 * libSQL, 6 seeds of 300 steps in the full suite on SQLite and PostgreSQL. A failure names the
 * seed and the step, with the steps before it and the command that repeats it. `LEDGER_MODEL_STATS=1` prints what each run reached.
 */
import { describe, expect, it } from "vitest";
import { type RunStats, runModel } from "./ledger-model/run.ts";

/** The seeds of `text`: a list (`1,5,9`) or a range (`1-50`). */
function seedsOf(text: string): number[] {
  const range = /^(\d+)-(\d+)$/.exec(text);
  if (range) {
    const [from, to] = [Number(range[1]), Number(range[2])];
    return Array.from({ length: to - from + 1 }, (_, i) => from + i);
  }
  return text.split(",").map(Number);
}

// Remote libSQL runs the embedded engine's very statements over a network transport: the full
// size there would time the transport, not test more rules, so it runs the small size.
const fast =
  process.env.LEDGER_MODEL_SIZE === "fast" || process.env.LEDGER_TEST_ENGINE === "libsql";
const seeds = seedsOf(process.env.LEDGER_MODEL_SEEDS ?? (fast ? "1-3" : "1-6"));
const steps = Number(process.env.LEDGER_MODEL_STEPS ?? (fast ? 100 : 300));

describe("the ledger against a reference model", () => {
  const runs: RunStats[] = [];
  for (const seed of seeds) {
    it(
      `seed ${seed}: ${steps} random steps`,
      async () => {
        const stats = await runModel(seed, steps);
        if (process.env.LEDGER_MODEL_STATS === "1")
          console.log(`seed ${seed}`, JSON.stringify(stats));
        runs.push(stats);
      },
      30_000 + steps * 500,
    );
  }
  it("the runs reached what they are for", () => {
    const total = (pick: (r: RunStats) => number) => runs.reduce((sum, r) => sum + pick(r), 0);
    const answers = (key: string) => total((r) => r.answers[key] ?? 0);
    // A failed run has reported itself; this test counts only complete sets of runs.
    if (runs.length < seeds.length) return;
    expect(total((r) => r.expiries)).toBeGreaterThan(0);
    expect(total((r) => r.lowEvents)).toBeGreaterThan(0);
    expect(answers("402 INSUFFICIENT_CREDITS")).toBeGreaterThan(0);
    expect(answers("409 BATCH_ABORTED")).toBeGreaterThan(0);
    if (steps * seeds.length >= 300) {
      expect(total((r) => r.leftoverSteps)).toBeGreaterThan(0);
      expect(answers("402 SPEND_LIMIT_EXCEEDED")).toBeGreaterThan(0);
    }
  });
});
