/**
 * The checks after every step of the ledger model test: each account's balance, reserved and
 * available, each grant's remaining and status, the `balance.low` events raised since the last
 * step; on request the spend limits' current windows (spent, held, remaining, window bounds,
 * spendable) and `ledger verify`.
 */
import { expect } from "vitest";
import type { Driver } from "./driver.ts";
import { at, credits, microsAt, stringAt } from "./exact.ts";
import type { LedgerModel } from "./model.ts";

/** What the event check has seen so far. */
export interface Checked {
  eventIds: Set<string>;
  /** Model events already matched. */
  events: number;
}

/** What the checks read of a run. */
export interface Subject {
  d: Driver;
  m: LedgerModel;
  now: () => number;
  where: () => string;
  checked: Checked;
  /** Every transaction id an answer gave. */
  answerIds: Set<string>;
  stats: { lowEvents: number };
  seed: number;
}

const OTHER_DEBIT = "(a debit no answer named: an expiry)";

async function list(s: Subject, path: string, field: string): Promise<unknown[]> {
  const answer = await s.d.send("GET", path);
  const items = at(answer.body, field);
  if (!Array.isArray(items)) throw new Error(`${path}: ${answer.text}`);
  return items;
}

async function checkAccount(s: Subject, ext: string, limits: boolean) {
  const now = s.now();
  const view = (await s.d.send("GET", `/v1/accounts/balance?accountId=${ext}`)).body;
  const figures = (read: (path: string) => number | null | undefined) =>
    ["balance", "reserved", "available"].map((p) => `${p} ${credits(read(p) ?? -1)}`);
  expect(
    figures((p) => microsAt(view, p)),
    `${ext}: ${s.where()}`,
  ).toEqual(
    figures((p) =>
      p === "balance"
        ? s.m.balance(ext)
        : p === "reserved"
          ? s.m.reserved(ext, now)
          : s.m.available(ext, now),
    ),
  );
  const grants = await list(s, `/v1/accounts/grants?accountId=${ext}&limit=1000`, "grants");
  const listed = Object.fromEntries(
    grants.map((g) => [
      stringAt(g, "id"),
      `${credits(microsAt(g, "remaining") ?? -1)} ${stringAt(g, "status")}`,
    ]),
  );
  const modelled = Object.fromEntries(
    s.m.account(ext).grants.map((g) => [g.id, `${credits(g.remaining)} ${s.m.status(g, now)}`]),
  );
  expect(listed, `grants of ${ext}: ${s.where()}`).toEqual(modelled);
  if (limits) await checkLimits(s, ext);
}

async function checkLimits(s: Subject, ext: string) {
  const now = s.now();
  const answer = (await s.d.send("GET", `/v1/accounts/limits?accountId=${ext}`)).body;
  const limits = at(answer, "limits");
  const read = (l: unknown) =>
    ["spent", "held", "remaining"].map((p) => `${p} ${credits(microsAt(l, p) ?? -1)}`).join(", ") +
    ` ${stringAt(l, "windowStart")}..${stringAt(l, "resetsAt")}`;
  const views = s.m.limitViews(ext, now);
  const modelled = views.map(
    (v) =>
      `spent ${credits(v.spent)}, held ${credits(v.held)}, remaining ${credits(v.remaining)} ` +
      `${new Date(v.startMs).toISOString()}..${new Date(v.endMs).toISOString()}`,
  );
  const available = s.m.available(ext, now);
  const spendable = Math.min(
    available,
    ...views.filter((v) => !v.limit.soft).map((v) => v.remaining),
  );
  expect(
    {
      limits: Array.isArray(limits) ? limits.map(read) : limits,
      spendable: credits(microsAt(answer, "spendable") ?? -1),
    },
    `limits of ${ext}: ${s.where()}`,
  ).toEqual({ limits: modelled, spendable: credits(spendable) });
}

/** The `balance.low` events since the last check, against the model's (order within a step aside). */
async function checkEvents(s: Subject) {
  const fresh = (await s.d.lowEvents()).filter((e) => !s.checked.eventIds.has(e.id));
  for (const e of fresh) s.checked.eventIds.add(e.id);
  const seen = fresh.map((e) => ({
    ext: e.ext,
    figures: [e.balance, e.reserved, e.available, e.threshold].map(credits).join(" "),
    transactionId:
      e.transactionId === null
        ? null
        : s.answerIds.has(e.transactionId)
          ? e.transactionId
          : OTHER_DEBIT,
  }));
  const expected = s.m.state.events.slice(s.checked.events).map((e) => {
    const figures = [e.balance, e.reserved, e.available, e.threshold].map(credits).join(" ");
    // A credit's unit may name its own transaction or the expiry it booked: either will do.
    const credit = `${e.txnId} (the credit) or ${OTHER_DEBIT}`;
    const named = seen.find((o) => o.ext === e.ext && o.figures === figures)?.transactionId;
    const either = named === e.txnId || named === OTHER_DEBIT ? named : credit;
    const transactionId =
      e.txn === "null"
        ? null
        : e.txn === "expiry"
          ? OTHER_DEBIT
          : e.txn === "credit"
            ? either
            : (e.txnId ?? "(unnamed)");
    return { ext: e.ext, figures, transactionId };
  });
  s.checked.events = s.m.state.events.length;
  s.stats.lowEvents += expected.length;
  const order = (a: { ext: string; figures: string }, b: { ext: string; figures: string }) =>
    `${a.ext} ${a.figures}`.localeCompare(`${b.ext} ${b.figures}`);
  expect(
    seen.sort(order),
    `balance.low events (balance reserved available threshold): ${s.where()}`,
  ).toEqual(expected.sort(order));
}

/** Every check after a step; `limits` and `verify` add the limit windows and `ledger verify`. */
export async function checkState(
  s: Subject,
  options: { accounts: readonly string[]; limits: boolean; verify: boolean },
) {
  for (const ext of options.accounts) await checkAccount(s, ext, options.limits);
  await checkEvents(s);
  if (options.verify) expect(await s.d.t.verify(), s.where()).toEqual([]);
}

/** Every expiry debit booked, per account, in ledger order: [grant id, credits]. @returns how many */
export async function checkExpiryDebits(s: Subject, exts: readonly string[]) {
  let count = 0;
  for (const ext of exts) {
    const account = s.m.account(ext);
    const ids = new Map(account.grants.map((g) => [g.seq, g.id]));
    const items: unknown[] = [];
    for (let offset = 0; ; offset += 500) {
      const page = await s.d.send(
        "GET",
        `/v1/transactions?accountId=${ext}&limit=500&offset=${offset}`,
      );
      const list = at(page.body, "items");
      if (!Array.isArray(list)) throw new Error(page.text);
      items.push(...list);
      if (list.length < 500) break;
    }
    const booked = items
      .reverse()
      .filter((x) => stringAt(x, "metadata.reason") === "credits_expired")
      .map((x) => [stringAt(x, "metadata.grantId"), credits(microsAt(x, "amount") ?? 0)]);
    const modelled = account.expiries.map(([seq, micros]) => [ids.get(seq), credits(micros)]);
    expect(booked, `expiry debits of ${ext}, seed ${s.seed}`).toEqual(modelled);
    count += booked.length;
  }
  return count;
}
