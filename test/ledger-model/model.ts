/**
 * The exact reference model of the ledger model test: accounts with credit grants (priority,
 * expiry, booked expiries), reservations with TTLs, spend limits and low-balance thresholds, in
 * integer micro-credits, written from the contract (sections 1, 6, 7, 13, 14, 18, 21) and not
 * from the service. `ops.ts` applies requests to it; this file holds the state and the rules
 * every request shares: available, the booking of due expiries, the spending order, the spend
 * check and the low-balance alert.
 */
import { Refused } from "./expected.ts";
import { type Period, windowOf, type Zone } from "./windows.ts";

export interface Limit {
  period: Period;
  amount: number;
  timeZone: Zone;
  soft: boolean;
}

export interface ModelGrant {
  /** Ledger order: the order the grants were made in. */
  seq: number;
  /** The service's id, learnt from the answer that made it. */
  id: string | null;
  amount: number;
  remaining: number;
  priority: number;
  expiresAt: number | null;
  /** Its expiry is booked: what is left of it is removed as far as `available` allows. */
  booked: boolean;
}

export interface ModelHold {
  key: number;
  id: string | null;
  ext: string;
  amount: number;
  expiresAt: number;
  state: "pending" | "confirmed" | "cancelled";
}

export interface ModelAccount {
  ext: string;
  threshold: number | null;
  limits: Limit[];
  grants: ModelGrant[];
  /** Spending debits (deductions, manual debits, confirms, usage charges): when and how much. */
  spends: { atMs: number; amount: number }[];
  /** Expiry debits booked, in order: [grant seq, micro-credits]. */
  expiries: [number, number][];
}

/** A `balance.low` event the model expects; `txn` says what its transactionId must be. */
export interface LowEvent {
  ext: string;
  balance: number;
  reserved: number;
  available: number;
  threshold: number;
  /** `answer`: the answer's transactionId; `expiry`: some expiry debit; `null`: none. */
  /** `credit`: the credit's own transactionId or some expiry debit. */
  txn: "answer" | "credit" | "expiry" | "null";
  /** For `answer` and `credit`: the id the answer gave, once known. */
  txnId?: string;
}

export interface ModelState {
  accounts: Record<string, ModelAccount>;
  holds: ModelHold[];
  seq: number;
  events: LowEvent[];
}

/** The spend of one limit's window at an instant (contract section 18). */
export interface LimitView {
  limit: Limit;
  startMs: number;
  endMs: number;
  spent: number;
  held: number;
  remaining: number;
}

const byExpiry = (a: ModelGrant, b: ModelGrant) =>
  (a.expiresAt ?? 0) - (b.expiresAt ?? 0) || a.seq - b.seq;

const NO_EXPIRY = Number.MAX_SAFE_INTEGER;

export class LedgerModel {
  state: ModelState = { accounts: {}, holds: [], seq: 0, events: [] };

  snapshot(): ModelState {
    return structuredClone(this.state);
  }
  restore(state: ModelState) {
    this.state = state;
  }

  account(ext: string): ModelAccount {
    const account = this.state.accounts[ext];
    if (!account) throw new Error(`the model has no account ${ext}`);
    return account;
  }
  nextSeq() {
    return this.state.seq++;
  }

  balance(ext: string) {
    return this.account(ext).grants.reduce((sum, g) => sum + g.remaining, 0);
  }
  /** Pending holds count until their expiresAt, exclusive (contract section 7). */
  reserved(ext: string, now: number) {
    return this.state.holds
      .filter((h) => h.ext === ext && h.state === "pending" && h.expiresAt > now)
      .reduce((sum, h) => sum + h.amount, 0);
  }
  available(ext: string, now: number) {
    return this.balance(ext) - this.reserved(ext, now);
  }

  /**
   * Books the account's due expiries (contract section 13): first what is left of grants
   * already booked (earliest expiry, then ledger order), then each grant past expiresAt not yet
   * booked, each removal capped at what is still available.
   */
  bookDue(ext: string, now: number) {
    const account = this.account(ext);
    let available = this.available(ext, now);
    const remove = (g: ModelGrant) => {
      const amount = Math.min(g.remaining, Math.max(0, available));
      if (amount <= 0) return;
      g.remaining -= amount;
      available -= amount;
      account.expiries.push([g.seq, amount]);
    };
    for (const g of account.grants.filter((g) => g.booked && g.remaining > 0).sort(byExpiry)) {
      remove(g);
    }
    const due = account.grants
      .filter((g) => !g.booked && g.expiresAt !== null && g.expiresAt <= now)
      .sort(byExpiry);
    for (const g of due) {
      g.booked = true;
      remove(g);
    }
  }

  /** Spends `amount` in the spending order: booked leftovers, priority, expiry, ledger order. */
  draw(ext: string, amount: number) {
    const order = this.account(ext)
      .grants.filter((g) => g.remaining > 0)
      .sort(
        (a, b) =>
          Number(b.booked) - Number(a.booked) ||
          a.priority - b.priority ||
          (a.expiresAt ?? NO_EXPIRY) - (b.expiresAt ?? NO_EXPIRY) ||
          a.seq - b.seq,
      );
    let left = amount;
    for (const g of order) {
      const take = Math.min(g.remaining, left);
      g.remaining -= take;
      left -= take;
    }
    if (left !== 0) throw new Error(`the model's grants do not cover a debit of ${amount}`);
  }

  /** Every limit's current window and spend at `now`. */
  limitViews(ext: string, now: number): LimitView[] {
    const account = this.account(ext);
    const held = this.reserved(ext, now);
    return account.limits.map((limit) => {
      const { startMs, endMs } = windowOf(now, limit.period, limit.timeZone);
      const spent = account.spends
        .filter((s) => s.atMs >= startMs && s.atMs < endMs)
        .reduce((sum, s) => sum + s.amount, 0);
      return {
        limit,
        startMs,
        endMs,
        spent,
        held,
        remaining: Math.max(0, limit.amount - spent - held),
      };
    });
  }

  /**
   * The 402s of a write needing `needed` of `available` and adding `spend` to the limits' spend
   * (section 6 first, then section 18: the hard limit passed whose window ends last).
   * @throws Refused INSUFFICIENT_CREDITS or SPEND_LIMIT_EXCEEDED
   */
  requireSpendable(ext: string, now: number, needed: number, spend: number) {
    const available = this.available(ext, now);
    if (needed > available) {
      throw new Refused(402, "INSUFFICIENT_CREDITS", {
        "error.details.available": available,
        "error.details.requested": needed,
      });
    }
    if (spend <= 0) return;
    let refusing: LimitView | undefined;
    for (const view of this.limitViews(ext, now)) {
      if (view.limit.soft || view.spent + view.held + spend <= view.limit.amount) continue;
      if (!refusing || view.endMs > refusing.endMs) refusing = view;
    }
    if (!refusing) return;
    throw new Refused(
      402,
      "SPEND_LIMIT_EXCEEDED",
      {
        "error.details.limit": refusing.limit.amount,
        "error.details.spent": refusing.spent,
        "error.details.held": refusing.held,
        "error.details.requested": spend,
        "error.details.remaining": refusing.remaining,
      },
      {
        "error.details.period": refusing.limit.period,
        "error.details.timeZone": refusing.limit.timeZone,
        "error.details.resetsAt": new Date(refusing.endMs).toISOString(),
      },
      Math.ceil((refusing.endMs - now) / 1000),
    );
  }

  /**
   * Runs `body` as one write unit on the account and adds the `balance.low` event when the unit
   * takes `available` from at least the threshold to below it (contract section 14).
   */
  unit<T>(ext: string, now: number, txn: LowEvent["txn"], body: () => T): T {
    const before = this.available(ext, now);
    const result = body();
    const { threshold } = this.account(ext);
    const after = this.available(ext, now);
    if (threshold !== null && before >= threshold && after < threshold) {
      this.state.events.push({
        ext,
        balance: this.balance(ext),
        reserved: this.reserved(ext, now),
        available: after,
        threshold,
        txn,
      });
    }
    return result;
  }

  /** The grant's status in the grant list (contract section 13). */
  status(g: ModelGrant, now: number) {
    if (g.expiresAt !== null && g.expiresAt <= now) return "expired";
    return g.remaining > 0 ? "active" : "spent";
  }
}
