/**
 * One seeded run of the ledger model test: random steps (single requests, atomic and
 * non-atomic batches, idempotent replays, the expiry jobs, moves of the fake clock), each answer
 * compared with the model's, and after every step each account's balance, reserved, available and
 * grants, and the `balance.low` events; the spend limits' windows every few steps, `ledger
 * verify` every ten and at the end, and at the end every expiry debit.
 */
import { LosslessNumber } from "lossless-json";
import { expect } from "vitest";
import { runExpireGrants } from "../../src/jobs/expire-grants.ts";
import { runExpireReservations } from "../../src/jobs/expire-reservations.ts";
import { catalogPrices } from "./catalog.ts";
import { type Answer, type Driver, startDriver } from "./driver.ts";
import { amount, at, credits, microsOf, numberAt, stringAt } from "./exact.ts";
import { type Expected, observed, shown } from "./expected.ts";
import { Generator, prng, type Rng } from "./gen.ts";
import { LedgerModel } from "./model.ts";
import { apply, type Op, type Outcome, type Pricing } from "./ops.ts";
import { describe, requestOf } from "./requests.ts";
import { type Checked, checkExpiryDebits, checkState } from "./state.ts";

export interface RunStats {
  /** Steps after which some expired grant still had credits that holds kept. */
  leftoverSteps: number;
  expiries: number;
  lowEvents: number;
  /** How many answers had each status and code (`402 SPEND_LIMIT_EXCEEDED`: 12). */
  answers: Record<string, number>;
}

/** A request sent with an Idempotency-Key, and its stored answer once one succeeded. */
interface Keyed {
  key: string;
  op: Op;
  stored: unknown;
  /** When the answer was stored: a key is kept 24 hours (contract section 4). */
  atMs: number;
}

const UNKNOWN_HOLD = "res_01ARZ3NDEKTSV4RRFFQ69G5FAV";
const EXTS = ["a", "b", "c"] as const;

/** Runs `steps` random steps with `seed`. @throws on the first divergence, naming seed and step */
export async function runModel(seed: number, steps: number): Promise<RunStats> {
  const r = prng(seed);
  // Just before midnight UTC on Monday 1 June 2026: hour, day, week and month windows turn.
  const d = await startDriver(Date.parse("2026-06-01T00:00:00Z") - r.int(1, 90) * 1000);
  try {
    return await new Run(seed, r, d).run(steps);
  } finally {
    await d.t.close();
  }
}

class Run {
  readonly m = new LedgerModel();
  readonly log: string[] = [];
  readonly keys: Keyed[] = [];
  readonly answerIds = new Set<string>();
  /** Numbers the Idempotency-Keys of single requests (a step may send several). */
  keySeq = 0;
  readonly stats: RunStats = { leftoverSteps: 0, expiries: 0, lowEvents: 0, answers: {} };
  readonly checked: Checked = { eventIds: new Set(), events: 0 };
  pricing: Pricing = { prices: {}, creditsPerUsdMicros: 0n };
  g!: Generator;
  step = -1;

  constructor(
    readonly seed: number,
    readonly r: Rng,
    readonly d: Driver,
  ) {}

  now = () => this.d.t.now();

  where = () =>
    `seed ${this.seed}, step ${this.step} (repeat: ` +
    `LEDGER_MODEL_SEEDS=${this.seed} ` +
    `LEDGER_MODEL_STEPS=${this.step + 1} npx vitest run test/ledger-model.test.ts)\n` +
    `last steps:\n${this.log.slice(-12).join("\n")}`;

  async setUp() {
    const r = this.r;
    const price = r.pick(["100", "1", "37.5", "1234.567891", "0.000001"]);
    this.pricing.creditsPerUsdMicros = BigInt(microsOf(price));
    const all = catalogPrices();
    const models = Array.from({ length: 4 }, () => r.pick(Object.keys(all).sort()));
    this.pricing.prices = all;
    await this.ok("/v1/project/update", { creditsPerUsd: new LosslessNumber(price) });
    // Events are stored for a subscribed endpoint; this one never answers, which is fine.
    await this.ok("/v1/webhooks/create", {
      url: "http://127.0.0.1:9/low",
      events: ["balance.low"],
    });
    this.g = new Generator(r, this.m, this.now, EXTS, models);
    for (const ext of EXTS) {
      const threshold = this.g.threshold();
      const limits = this.g.limits();
      this.m.state.accounts[ext] = { ext, threshold, limits, grants: [], spends: [], expiries: [] };
      await this.ok("/v1/accounts/create", {
        externalId: ext,
        ...(threshold === null ? {} : { lowBalanceThreshold: amount(threshold) }),
        spendLimits: limits.map((l) => ({ ...l, amount: amount(l.amount) })),
      });
    }
    this.log.push(
      `set up: creditsPerUsd ${price}, models ${models.join(" ")}, start ${new Date(this.now()).toISOString()}`,
    );
  }

  async ok(path: string, body: unknown) {
    const answer = await this.d.send("POST", path, body);
    expect(answer.status, `${path}: ${answer.text}`).toBe(200);
    return answer;
  }

  async run(steps: number): Promise<RunStats> {
    await this.setUp();
    for (this.step = 0; this.step < steps; this.step++) {
      await this.randomStep();
      const last = this.step === steps - 1;
      const every = (n: number) => this.step % n === 0 || last;
      // Every account after every step (time alone moves reserved, available and statuses).
      await checkState(this, {
        accounts: EXTS,
        limits: every(10),
        verify: every(10),
      });
      const leftovers = Object.values(this.m.state.accounts).some((a) =>
        a.grants.some((g) => g.booked && g.remaining > 0),
      );
      if (leftovers) this.stats.leftoverSteps++;
    }
    this.stats.expiries = await checkExpiryDebits(this, EXTS);
    return this.stats;
  }

  async randomStep() {
    const r = this.r;
    const roll = r.int(1, 100);
    if (roll <= 4) return this.holdOverExpiry();
    if (roll <= 55) return this.single(this.g.op());
    if (roll <= 67) return this.batch();
    if (roll <= 72) return this.replay();
    if (roll <= 77) return this.job();
    return this.moveClock();
  }

  /**
   * A grant expiring in a second or so under a hold of everything available, and the clock
   * onto its expiry: the expiry is held, so its credits stay (contract section 13). Half the
   * time, then, the issue's sequence: an add, and a deduction of the same amount.
   */
  async holdOverExpiry() {
    const r = this.r;
    const ext = r.pick(EXTS);
    const expiresAt = this.now() + r.int(500, 3000);
    await this.single({ kind: "add", ext, amount: this.g.amount(20), expiresAt, manual: false });
    const available = this.m.available(ext, this.now());
    await this.single({ kind: "reserve", ext, amount: available, ttlSeconds: r.int(5, 10) });
    this.d.t.setNow(expiresAt + r.pick([0, 0, 1]));
    this.log.push(`${this.step}: clock to ${new Date(this.now()).toISOString()}`);
    if (r.chance(0.5)) return;
    const amount = this.g.amount(30);
    await this.single({ kind: "add", ext, amount, manual: false });
    await this.single({ kind: "debit", ext, amount, manual: r.chance(0.3) });
  }

  holdId = (key: number | null) =>
    this.m.state.holds.find((h) => h.key === key)?.id ?? UNKNOWN_HOLD;

  /** Compares an answer with the model's; `batch`: a batch result (no headers). */
  compare(
    expected: Expected,
    status: number,
    body: unknown,
    retryAfter: string | null | undefined,
  ) {
    const key = `${status}${stringAt(body, "error.code") ? ` ${stringAt(body, "error.code")}` : ""}`;
    this.stats.answers[key] = (this.stats.answers[key] ?? 0) + 1;
    expect(observed(expected, status, body, retryAfter), this.where()).toEqual(shown(expected));
  }

  /** Names what an answer made (a grant, a hold) and the debits its events name. */
  learn(outcome: Outcome, body: unknown) {
    if (outcome.expected.status !== 200) return;
    const txn = stringAt(body, "transactionId") ?? stringAt(body, "transaction.id");
    if (txn !== undefined) this.answerIds.add(txn);
    for (const e of this.m.state.events.slice(outcome.eventsFrom, outcome.eventsTo)) {
      if (e.txn === "answer" || e.txn === "credit") {
        e.txnId = txn ?? "(no transactionId in the answer)";
      }
    }
    const learn = outcome.learn;
    if (learn && "grant" in learn) {
      const grant = Object.values(this.m.state.accounts)
        .flatMap((a) => a.grants)
        .find((g) => g.seq === learn.grant);
      if (grant) grant.id = stringAt(body, "grantId") ?? null;
    } else if (learn) {
      const hold = this.m.state.holds.find((h) => h.key === learn.hold);
      if (hold) hold.id = stringAt(body, "reservation.id") ?? null;
    }
  }

  logAnswer(what: string, expected: Expected, answer: { status: number; body: unknown }) {
    const code = stringAt(answer.body, "error.code");
    const model = `${expected.status}${expected.code ? ` ${expected.code}` : ""}`;
    this.log.push(
      `${this.step} @${new Date(this.now()).toISOString()}: ${what} → ${answer.status}${code ? ` ${code}` : ""} (model ${model})`,
    );
  }

  async single(op: Op, keyed?: Keyed) {
    const request = requestOf(op, this.holdId);
    const key = keyed?.key ?? (this.r.chance(0.2) ? `k-${this.seed}-${this.keySeq++}` : undefined);
    const outcome = apply(this.m, op, this.now(), this.pricing);
    const answer = await this.d.send("POST", request.path, request.body, key);
    this.logAnswer(describe(op, credits), outcome.expected, answer);
    this.compare(outcome.expected, answer.status, answer.body, answer.retryAfter);
    this.learn(outcome, answer.body);
    if (key === undefined) return;
    const stored = answer.status === 200 ? answer.body : null;
    if (keyed) Object.assign(keyed, { stored, atMs: this.now() });
    else this.keys.push({ key, op, stored, atMs: this.now() });
  }

  async batch() {
    const r = this.r;
    const atomic = r.chance(0.5);
    const ops = Array.from({ length: r.int(2, 6) }, () => this.g.op());
    const keys = ops.map((op, i) =>
      r.chance(0.15)
        ? { key: `b-${this.seed}-${this.step}-${i}`, op, stored: null, atMs: this.now() }
        : undefined,
    );
    const requests = ops.map((op) => requestOf(op, this.holdId));
    const before = this.m.snapshot();
    const outcomes = ops.map((op) => apply(this.m, op, this.now(), this.pricing));
    const failed = outcomes.findIndex((o) => o.expected.status !== 200);
    let expected = outcomes.map((o) => o.expected);
    if (atomic && failed >= 0) {
      this.m.restore(before);
      expected = expected.map((e, i) =>
        i === failed
          ? e
          : {
              status: 409,
              code: "BATCH_ABORTED",
              money: {},
              fields: { "error.details.failedIndex": String(failed) },
            },
      );
    }
    const answer = await this.d.send("POST", "/v1/batch", {
      atomic,
      operations: requests.map((q, i) => ({
        path: q.path,
        body: q.body,
        ...(keys[i] ? { idempotencyKey: keys[i].key } : {}),
      })),
    });
    const results = at(answer.body, "results");
    const committed = atomic
      ? failed >= 0
        ? 0
        : ops.length
      : expected.filter((e) => e.status === 200).length;
    ops.forEach((op, i) => {
      const e = expected[i] as Expected;
      const body = Array.isArray(results) ? at(results[i], "body") : undefined;
      const status = Array.isArray(results) ? (numberAt(results[i], "status") ?? 0) : 0;
      this.logAnswer(`  batch${atomic ? " atomic" : ""}[${i}] ${describe(op, credits)}`, e, {
        status,
        body,
      });
    });
    expect(
      [answer.status, numberAt(answer.body, "committed")],
      `${answer.text}\n${this.where()}`,
    ).toEqual([200, committed]);
    ops.forEach((_, i) => {
      const e = expected[i] as Expected;
      const { retryAfter: _header, ...withoutHeader } = e;
      const result = Array.isArray(results) ? results[i] : undefined;
      this.compare(withoutHeader, numberAt(result, "status") ?? 0, at(result, "body"), undefined);
      const outcome = outcomes[i] as Outcome;
      if (e.status === 200) this.learn(outcome, at(result, "body"));
      const keyed = keys[i];
      if (keyed && e.status === 200) this.keys.push({ ...keyed, stored: at(result, "body") });
    });
  }

  /** Sends a keyed request again: a stored success replays, a failure runs anew (section 4). */
  async replay() {
    // Keys well within their 24 hours only: the clock sometimes jumps by days.
    const fresh = this.keys.filter((k) => this.now() - k.atMs < 20 * 3_600_000);
    if (fresh.length === 0) return this.moveClock();
    const keyed = this.r.pick(fresh);
    if (keyed.stored === null) return this.single(keyed.op, keyed);
    const request = requestOf(keyed.op, this.holdId);
    const answer: Answer = await this.d.send("POST", request.path, request.body, keyed.key);
    this.log.push(
      `${this.step}: replay ${keyed.key}: ${describe(keyed.op, credits)} → ${answer.status}`,
    );
    expect(
      { status: answer.status, replayed: answer.replayed, body: answer.body },
      this.where(),
    ).toEqual({
      status: 200,
      replayed: "true",
      body: keyed.stored,
    });
  }

  async job() {
    const nowMs = this.now();
    await runExpireGrants({ queue: this.d.t.ledger.queue, nowMs });
    await runExpireReservations({ queue: this.d.t.ledger.queue, nowMs });
    for (const ext of EXTS) this.m.unit(ext, nowMs, "expiry", () => this.m.bookDue(ext, nowMs));
    this.log.push(`${this.step} @${new Date(nowMs).toISOString()}: expiry jobs`);
  }

  /** Moves the clock by 1 ms to seconds, onto an expiry, or onto a limit's window end. */
  async moveClock() {
    const r = this.r;
    const now = this.now();
    const grants = Object.values(this.m.state.accounts).flatMap((a) => a.grants);
    const expiries = [
      ...grants.filter((g) => !g.booked && g.remaining > 0).map((g) => g.expiresAt ?? 0),
      ...this.m.state.holds.filter((h) => h.state === "pending").map((h) => h.expiresAt),
    ].filter((t) => t > now);
    const windows = EXTS.flatMap((ext) => this.m.limitViews(ext, now).map((v) => v.endMs));
    const roll = r.int(1, 100);
    let to = now + r.pick([1, r.int(2, 999), r.int(1000, 4000)]);
    if (roll <= 35 && expiries.length > 0) to = Math.min(...expiries) + r.pick([-1, 0, 0, 1]);
    else if (roll <= 38 && windows.length > 0) to = Math.min(...windows) + r.pick([-1, 0, 1]);
    if (to > now) this.d.t.setNow(to);
    this.log.push(`${this.step}: clock to ${new Date(this.now()).toISOString()}`);
  }
}
