/**
 * The operations of the ledger model test: each is one write request (alone, or as an operation
 * of a batch), with what it does to the model and the answer the model expects, from the
 * contract (sections 6, 7, 13, 14, 18, 21). A refused request changes nothing: the model goes
 * back to its state before it, due expiries included (section 13).
 */
import { type Expected, ok, Refused } from "./expected.ts";
import type { LedgerModel, Limit, ModelHold } from "./model.ts";

/** Tokens of one usage, priced with a catalog model. */
export interface Usage {
  modelId: string;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
}

/** A model's prices: micro-USD per million tokens. */
export interface Price {
  input: bigint;
  output: bigint;
  cached: bigint | null;
}

/** What pricing a usage needs: the catalog's prices and the project's credit price. */
export interface Pricing {
  prices: Record<string, Price>;
  /** `creditsPerUsd` in micro-credits per USD. */
  creditsPerUsdMicros: bigint;
}

export type Op =
  | {
      kind: "add";
      ext: string;
      amount: number;
      priority?: number;
      expiresAt?: number;
      manual: boolean;
    }
  | { kind: "debit"; ext: string; amount: number; manual: boolean }
  | { kind: "reserve"; ext: string; amount: number; ttlSeconds: number }
  | { kind: "confirm"; hold: number | null; actual: number }
  | { kind: "confirmUsage"; hold: number | null; usage: Usage }
  | { kind: "cancel"; hold: number | null }
  | { kind: "charge"; ext: string; usage: Usage }
  | { kind: "update"; ext: string; threshold?: number | null; limits?: Limit[] }
  | { kind: "invalid"; ext: string };

/** The model's answer to an operation, and what the real answer names for the model. */
export interface Outcome {
  expected: Expected;
  /** A grant (by seq) or a hold (by key) whose service id is in the answer. */
  learn?: { grant: number } | { hold: number };
  /** The model's events `[eventsFrom, eventsTo)` are this operation's own. */
  eventsFrom: number;
  eventsTo: number;
}

/**
 * The credit cost of `usage` (contract sections 9 and 21): the exact USD cost in pico-USD ×
 * the credit price, rounded up to the micro-credit.
 */
export function creditCost(pricing: Pricing, usage: Usage): number {
  const price = pricing.prices[usage.modelId];
  if (!price) throw new Error(`no price for ${usage.modelId}`);
  const pico =
    BigInt(usage.inputTokens - usage.cachedTokens) * price.input +
    BigInt(usage.cachedTokens) * (price.cached ?? price.input) +
    BigInt(usage.outputTokens) * price.output;
  const scaled = pico * pricing.creditsPerUsdMicros;
  return Number((scaled + 10n ** 12n - 1n) / 10n ** 12n);
}

/** Applies `op` at `now`. @returns the answer the model expects */
export function apply(m: LedgerModel, op: Op, now: number, pricing: Pricing): Outcome {
  const before = m.snapshot();
  const eventsFrom = m.state.events.length;
  try {
    return { ...run(m, op, now, pricing), eventsFrom, eventsTo: m.state.events.length };
  } catch (e) {
    if (!(e instanceof Refused)) throw e;
    m.restore(before);
    return { expected: e.expected, eventsFrom, eventsTo: eventsFrom };
  }
}

/** A hold that a confirm or cancel may settle. @throws Refused 404 or 409 otherwise */
function pendingHold(m: LedgerModel, key: number | null, now: number): ModelHold {
  const hold = m.state.holds.find((h) => h.key === key);
  if (!hold) throw new Refused(404, "RESERVATION_NOT_FOUND");
  const status = hold.state !== "pending" ? hold.state : hold.expiresAt <= now ? "expired" : null;
  if (status)
    throw new Refused(409, "RESERVATION_NOT_PENDING", {}, { "error.details.status": status });
  return hold;
}

/** A debit that spends (deduction, manual debit, usage charge): the unit of section 13. */
function spend(m: LedgerModel, ext: string, amount: number, now: number) {
  m.unit(ext, now, "answer", () => {
    m.bookDue(ext, now);
    m.requireSpendable(ext, now, amount, amount);
    m.draw(ext, amount);
    m.account(ext).spends.push({ atMs: now, amount });
  });
}

function run(
  m: LedgerModel,
  op: Op,
  now: number,
  pricing: Pricing,
): Omit<Outcome, "eventsFrom" | "eventsTo"> {
  // Amounts that must be positive (contract section 1).
  if ("amount" in op && op.amount <= 0) throw new Refused(400, "VALIDATION_ERROR");
  switch (op.kind) {
    case "add": {
      if (op.expiresAt !== undefined && op.expiresAt <= now) {
        throw new Refused(400, "VALIDATION_ERROR");
      }
      const seq = m.nextSeq();
      // An add books due expiries first; an alert of its unit names some transaction.
      m.unit(op.ext, now, "credit", () => {
        m.bookDue(op.ext, now);
        m.account(op.ext).grants.push({
          seq,
          id: null,
          amount: op.amount,
          remaining: op.amount,
          priority: op.priority ?? 50,
          expiresAt: op.expiresAt ?? null,
          booked: false,
        });
      });
      const balance = m.balance(op.ext);
      const expected = op.manual
        ? ok({ "transaction.amount": op.amount, "transaction.balanceAfter": balance })
        : ok({ balance, added: op.amount });
      return { expected, learn: { grant: seq } };
    }
    case "debit": {
      spend(m, op.ext, op.amount, now);
      const balance = m.balance(op.ext);
      const expected = op.manual
        ? ok({ "transaction.amount": op.amount, "transaction.balanceAfter": balance })
        : ok({ balance, deducted: op.amount });
      return { expected };
    }
    case "charge": {
      const cost = creditCost(pricing, op.usage);
      spend(m, op.ext, cost, now);
      return { expected: ok({ creditsCharged: cost, balance: m.balance(op.ext) }) };
    }
    case "reserve": {
      const key = m.nextSeq();
      const expiresAt = now + op.ttlSeconds * 1000;
      m.unit(op.ext, now, "null", () => {
        m.bookDue(op.ext, now);
        m.requireSpendable(op.ext, now, op.amount, op.amount);
        m.state.holds.push({
          key,
          id: null,
          ext: op.ext,
          amount: op.amount,
          expiresAt,
          state: "pending",
        });
      });
      const expected = ok(
        { "reservation.amount": op.amount },
        {
          "reservation.status": "pending",
          "reservation.expiresAt": new Date(expiresAt).toISOString(),
        },
      );
      return { expected, learn: { hold: key } };
    }
    case "confirm":
    case "confirmUsage": {
      const hold = pendingHold(m, op.hold, now);
      const actual = op.kind === "confirm" ? op.actual : creditCost(pricing, op.usage);
      const excess = Math.max(0, actual - hold.amount);
      m.unit(hold.ext, now, "answer", () => {
        m.bookDue(hold.ext, now);
        m.requireSpendable(hold.ext, now, excess, excess);
        m.draw(hold.ext, actual);
        hold.state = "confirmed";
        m.account(hold.ext).spends.push({ atMs: now, amount: actual });
        // What the released hold no longer keeps of expired grants goes in the same unit.
        m.bookDue(hold.ext, now);
      });
      const money: Record<string, number> = {
        reservedAmount: hold.amount,
        actualAmount: actual,
        amountReleased: Math.max(0, hold.amount - actual),
        balance: m.balance(hold.ext),
      };
      if (op.kind === "confirmUsage") money.creditsCharged = actual;
      return { expected: ok(money, { reservationId: hold.id }) };
    }
    case "cancel": {
      const hold = pendingHold(m, op.hold, now);
      m.unit(hold.ext, now, "null", () => {
        m.bookDue(hold.ext, now);
        hold.state = "cancelled";
        m.bookDue(hold.ext, now);
      });
      return { expected: ok({ amountReleased: hold.amount }, { reservationId: hold.id }) };
    }
    case "update": {
      const account = m.account(op.ext);
      if (op.threshold !== undefined) account.threshold = op.threshold;
      if (op.limits !== undefined) account.limits = op.limits;
      return { expected: ok({ "account.lowBalanceThreshold": account.threshold }) };
    }
    case "invalid":
      throw new Refused(400, "VALIDATION_ERROR");
  }
}
