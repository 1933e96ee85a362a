/**
 * A model-based random test of credit grants (docs/api.md#spending-order,
 * docs/api.md#expiry-of-grants) over real HTTP: random adds and manual credits (random
 * priorities and expiries), deductions, manual debits, reservations, confirms and cancels, the
 * expiry job, and a fake clock moved forward. After every step the service must match a
 * reference model of the rules: each grant's `remaining` and status, the balance, reserved and
 * available, balance = Σ remaining and every `ledger verify` check; at the end, the same expiry
 * debits in the same order.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DAY, HOUR, type HttpLedger, httpLedger, okBody } from "./grants-http.ts";
import { prng } from "./ledger-model/gen.ts";

const open: HttpLedger[] = [];
afterEach(async () => {
  for (const l of open.splice(0)) await l.close();
});

interface ModelGrant {
  id: string;
  seq: number;
  remaining: number; // micro-credits
  priority: number;
  expiresAt: number | null; // epoch ms
  booked: boolean;
}

interface ModelHold {
  id: string;
  amount: number; // micro-credits
  expiresAt: number;
}

/** The reference model of one account's grants, holds and expiries. */
class Model {
  grants: ModelGrant[] = [];
  holds: ModelHold[] = [];
  expiries: [string, number][] = [];
  private seq = 0;

  /** A copy of the state, to go back to when the service refuses a request. */
  snapshot() {
    return structuredClone({ grants: this.grants, holds: this.holds, expiries: this.expiries });
  }
  restore(state: ReturnType<Model["snapshot"]>) {
    this.grants = state.grants;
    this.holds = state.holds;
    this.expiries = state.expiries;
  }

  balance() {
    return this.grants.reduce((s, g) => s + g.remaining, 0);
  }
  reserved(now: number) {
    return this.holds.filter((h) => h.expiresAt > now).reduce((s, h) => s + h.amount, 0);
  }
  available(now: number) {
    return this.balance() - this.reserved(now);
  }

  add(id: string, amount: number, priority: number, expiresAt: number | null) {
    this.grants.push({
      id,
      seq: this.seq++,
      remaining: amount,
      priority,
      expiresAt,
      booked: false,
    });
  }

  /**
   * Books due expiries: held leftovers of booked grants, then grants past expiresAt, each capped
   * at what is still available (holds are covered by unexpired credits first).
   */
  bookDue(now: number) {
    let available = this.available(now);
    const byExpiry = (a: ModelGrant, b: ModelGrant) =>
      (a.expiresAt ?? 0) - (b.expiresAt ?? 0) || a.seq - b.seq;
    const booked = this.grants.filter((g) => g.booked && g.remaining > 0).sort(byExpiry);
    for (const g of booked) {
      if (available <= 0) break;
      const amount = Math.min(g.remaining, available);
      g.remaining -= amount;
      available -= amount;
      this.expiries.push([g.id, amount]);
    }
    const due = this.grants
      .filter((g) => !g.booked && g.remaining > 0 && g.expiresAt !== null && g.expiresAt <= now)
      .sort(byExpiry);
    for (const g of due) {
      const amount = Math.min(g.remaining, Math.max(0, available));
      g.booked = true;
      if (amount > 0) {
        g.remaining -= amount;
        available -= amount;
        this.expiries.push([g.id, amount]);
      }
    }
  }

  /** Spends `amount` in the spending order. */
  draw(amount: number) {
    const order = this.grants
      .filter((g) => g.remaining > 0)
      .sort(
        (a, b) =>
          Number(b.booked) - Number(a.booked) ||
          a.priority - b.priority ||
          (a.expiresAt ?? Number.MAX_SAFE_INTEGER) - (b.expiresAt ?? Number.MAX_SAFE_INTEGER) ||
          a.seq - b.seq,
      );
    let left = amount;
    for (const g of order) {
      const take = Math.min(g.remaining, left);
      g.remaining -= take;
      left -= take;
    }
    expect(left, "the model's grants cover the debit").toBe(0);
  }

  status(g: ModelGrant, now: number) {
    if (g.expiresAt !== null && g.expiresAt <= now) return "expired";
    return g.remaining > 0 ? "active" : "spent";
  }
}

const credits = (micros: number) => micros / 1_000_000;

async function run(seed: number, steps: number) {
  const l = await httpLedger("2026-05-01T00:00:00Z");
  open.push(l);
  const r = prng(seed);
  const m = new Model();
  await l.ok("POST", "/v1/accounts/create", { externalId: "m" });
  const now = () => l.t.now();
  // Amounts are whole hundredths of a credit, so that their JSON literals are exact.
  const amount = (hiCredits: number) => r.int(1, hiCredits * 100) * 10_000;

  const credit = async (expiresInMs?: number) => {
    const micros = amount(40);
    const priority = r.chance(0.3) ? undefined : r.pick([0, 10, 50, 50, 90, 100]);
    const expiresAt =
      expiresInMs !== undefined
        ? now() + expiresInMs
        : r.chance(0.4)
          ? null
          : now() + r.int(1, 36) * HOUR - r.int(0, 59) * 60_000;
    const terms = {
      ...(priority === undefined ? {} : { priority }),
      ...(expiresAt === null ? {} : { expiresAt: new Date(expiresAt).toISOString() }),
    };
    m.bookDue(now());
    const manual = r.chance(0.3);
    const body = manual
      ? { accountId: "m", amount: credits(micros), type: "credit", ...terms }
      : { accountId: "m", amount: credits(micros), ...terms };
    const res = await l.ok(
      "POST",
      manual ? "/v1/transactions/create" : "/v1/accounts/credits/add",
      body,
    );
    if (res.grantId === undefined)
      throw new Error(`a credit made no grant: ${JSON.stringify(res)}`);
    m.add(res.grantId, micros, priority ?? 50, expiresAt);
    return `credit ${credits(micros)} p${priority ?? 50} exp ${expiresAt ?? "-"}`;
  };

  const debit = async () => {
    const micros = amount(30);
    const before = m.snapshot();
    m.bookDue(now());
    const manual = r.chance(0.3);
    const res = manual
      ? await l.http("POST", "/v1/transactions/create", {
          accountId: "m",
          amount: credits(micros),
          type: "debit",
        })
      : await l.http("POST", "/v1/accounts/credits/deduct", {
          accountId: "m",
          amount: credits(micros),
        });
    if (micros > m.available(now())) {
      expect(res.status, JSON.stringify(res.body)).toBe(402);
      // A failed request changes nothing: its expiries are left to the next write or the job.
      m.restore(before);
      return `debit ${credits(micros)}: 402`;
    }
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    m.draw(micros);
    return `debit ${credits(micros)}`;
  };

  const reserve = async (mostOfIt = r.chance(0.3), ttl = r.int(60, 86_400)) => {
    // Some holds take most of what is available, so that expiries meet held credits.
    const most = Math.floor((m.available(now()) * r.int(5, 10)) / 100 / 10_000) * 10_000;
    const micros = mostOfIt && most > 0 ? most : amount(30);
    const before = m.snapshot();
    m.bookDue(now());
    const res = await l.http("POST", "/v1/reservations/create", {
      accountId: "m",
      amount: credits(micros),
      ttlSeconds: ttl,
    });
    if (micros > m.available(now())) {
      expect(res.status, JSON.stringify(res.body)).toBe(402);
      m.restore(before);
      return `reserve ${credits(micros)}: 402`;
    }
    const { reservation } = okBody(res);
    m.holds.push({ id: reservation.id, amount: micros, expiresAt: now() + ttl * 1000 });
    return `reserve ${credits(micros)} for ${ttl} s`;
  };

  const settle = async () => {
    const hold = m.holds.length === 0 ? undefined : r.pick(m.holds);
    if (!hold) return "settle: no hold";
    const confirm = r.chance(0.6);
    const actual = confirm ? r.int(0, Math.floor((hold.amount * 3) / 2 / 10_000)) * 10_000 : 0;
    const path = confirm ? "/v1/reservations/confirm" : "/v1/reservations/cancel";
    const body = confirm
      ? { reservationId: hold.id, actualAmount: credits(actual) }
      : { reservationId: hold.id };
    const res = await l.http("POST", path, body);
    if (hold.expiresAt <= now()) {
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      m.holds = m.holds.filter((h) => h.id !== hold.id);
      return `${confirm ? "confirm" : "cancel"}: expired hold`;
    }
    const before = m.snapshot();
    m.bookDue(now());
    const excess = actual - hold.amount;
    if (confirm && excess > 0 && excess > m.available(now())) {
      expect(res.status, JSON.stringify(res.body)).toBe(402);
      m.restore(before);
      return `confirm ${credits(actual)} of ${credits(hold.amount)}: 402`;
    }
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (confirm) m.draw(actual);
    m.holds = m.holds.filter((h) => h.id !== hold.id);
    // What no hold covers any more of the expired grants goes in the same transaction.
    m.bookDue(now());
    if (confirm) expect(res.body).toMatchObject({ balance: credits(m.balance()) });
    return `${confirm ? `confirm ${credits(actual)}` : "cancel"} of ${credits(hold.amount)}`;
  };

  const job = async () => {
    await l.expireJob();
    m.bookDue(now());
    return "expire job";
  };

  const advance = async () => {
    l.t.advance(r.pick([1, 60_000, HOUR, 6 * HOUR, DAY / 2, DAY]) * r.int(1, 3));
    return `advance to ${new Date(now()).toISOString()}`;
  };

  // Moves the clock to the next expiry still to be booked, where holds meet expiring credits.
  const toNextExpiry = async () => {
    const next = Math.min(
      ...m.grants
        .filter((g) => !g.booked && g.remaining > 0 && g.expiresAt !== null)
        .map((g) => g.expiresAt ?? 0),
    );
    if (Number.isFinite(next) && next > now()) l.t.setNow(next + r.int(0, 1));
    return `advance to the next expiry: ${new Date(now()).toISOString()}`;
  };

  // A grant that expires while a hold takes most of the account's credits.
  const holdOverExpiry = async () => {
    const steps = [await credit(r.int(1, 60) * 60_000), await reserve(true, r.int(3600, 7200))];
    steps.push(await toNextExpiry());
    return steps.join("; ");
  };

  const ops = [
    holdOverExpiry,
    toNextExpiry,
    credit,
    credit,
    credit,
    debit,
    debit,
    debit,
    reserve,
    reserve,
    settle,
    settle,
    job,
    advance,
    advance,
  ];
  const log: string[] = [];
  let heldSteps = 0;
  for (let step = 0; step < steps; step++) {
    log.push(await r.pick(ops)());
    if (m.grants.some((g) => g.booked && g.remaining > 0)) heldSteps++;
    const where = `seed ${seed}, step ${step}:\n${log.slice(-8).join("\n")}`;
    const grants = await l.grants("m");
    const listed = Object.fromEntries(grants.map((g) => [g.id, [g.remaining, g.status]]));
    const modelled = Object.fromEntries(
      m.grants.map((g) => [g.id, [credits(g.remaining), m.status(g, now())]]),
    );
    expect(listed, where).toEqual(modelled);
    const view = await l.balance("m");
    expect([view.balance, view.reserved, view.available], where).toEqual([
      credits(m.balance()),
      credits(m.reserved(now())),
      credits(m.available(now())),
    ]);
    if (step % 5 === 0 || step === steps - 1) expect(await l.t.verify(), where).toEqual([]);
  }
  const booked = (await l.txns("m"))
    .filter((x) => x.metadata.reason === "credits_expired")
    .map((x) => [x.metadata.grantId, Math.round(x.amount * 1_000_000)]);
  expect(booked).toEqual(m.expiries);
  return { expiries: m.expiries.length, heldSteps };
}

describe("grants against a reference model", () => {
  let heldSteps = 0;
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`seed ${seed}: 200 random steps`, async () => {
      const result = await run(seed, 200);
      expect(result.expiries).toBeGreaterThan(0);
      heldSteps += result.heldSteps;
    }, 120_000);
  }
  it("the runs reached credits that holds kept past their grant's expiry", () => {
    expect(heldSteps).toBeGreaterThan(0);
  });
});
