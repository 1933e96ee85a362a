/**
 * A handler's 200 body is checked at compile time against its route's schema
 * (docs/design.md#typed-routes). `npm test` type-checks this file: each `@ts-expect-error` line
 * below fails `tsc` the day it compiles, that is, the day a body with an undeclared, missing,
 * renamed or mistyped field is accepted again. At run time the accepted bodies are checked
 * against the route's schema.
 */
import { expect, it } from "vitest";
import { balanceLow } from "../src/accounts/low-balance.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { balanceSchema } from "../src/accounts/schemas.ts";
import { replyFor } from "../src/http/respond.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { fromMicros } from "../src/money.ts";

it("takes exactly the balance view's fields, of their types", () => {
  const reply = replyFor(accountRoutes.balance);
  const view = {
    accountId: "acc_1",
    externalId: "x",
    balance: 5,
    reserved: 2,
    available: 3,
    fundedBy: "acc_1",
  };
  expect(balanceSchema.strict().parse(reply(view).body)).toEqual(view);
  // @ts-expect-error a field the route does not declare
  reply({ ...view, nope: 1 });
  const { available: _available, ...withoutAvailable } = view;
  // @ts-expect-error `available` renamed
  reply({ ...withoutAvailable, availableCredits: 3 });
  // @ts-expect-error `available` missing
  reply(withoutAvailable);
  // @ts-expect-error an amount as a string
  reply({ ...view, balance: "5" });
});

it("lets an amount be written as its exact decimal literal, and nothing else in its place", () => {
  const reply = replyFor(ledgerRoutes.deduct);
  type Body = Parameters<typeof reply>[0];
  const exact: Body["balance"] = fromMicros(8_600_000_000_000_001);
  expect(String(exact)).toBe("8600000000.000001");
  // @ts-expect-error a bigint is not an amount on the wire
  const wrong: Body["balance"] = 5n;
  expect(wrong).toBe(5n);
});

it("takes exactly an event's data fields where the event is emitted", () => {
  type Data = Parameters<typeof balanceLow.emit>[1]["data"];
  const data = {
    accountId: "acc_1",
    externalId: "x",
    balance: 4,
    reserved: 1,
    available: 3,
    threshold: 5,
    transactionId: null,
  };
  const ok: Data = data;
  expect(balanceLow.data.strict().parse(ok)).toEqual(data);
  // @ts-expect-error a field the event does not declare
  const extra: Data = { ...data, nope: 1 };
  // @ts-expect-error `threshold` renamed
  const renamed: Data = { ...data, threshold: undefined, lowBalanceThreshold: 5 };
  const { available: _, ...withoutAvailable } = data;
  // @ts-expect-error `available` missing
  const missing: Data = withoutAvailable;
  // @ts-expect-error data built only when subscribed is checked the same way
  const lazy: Data = async (make) => make({ ...withoutAvailable, availableCredits: 3 });
  expect([extra, renamed, missing, typeof lazy]).toHaveLength(4);
});
