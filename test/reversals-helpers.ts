/**
 * Helpers of the reversal tests (test/reversals.test.ts): a ledger on a fake clock served over
 * real HTTP (a listening server, called with fetch), the calls the tests make, each 200 answer
 * checked against its route's own schema and typed by it, and the stored webhook events.
 */
import { accountRoutes } from "../src/accounts/routes.ts";
import type { ErrorCode } from "../src/errors.ts";
import { runExpireGrants } from "../src/jobs/expire-grants.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { expectError, type OkBody } from "./contract.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import {
  fetchFrom,
  type JsonReply,
  type JsonRequest,
  okBody,
  type Send,
  sendJson,
} from "./http-client.ts";

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** The path of the reversal route. */
export const REVERSE = "/v1/transactions/reverse";

export interface ReversalLedger {
  t: TestLedger;
  base: string;
  send: Send;
  post: (path: string, body: unknown, request?: JsonRequest) => Promise<JsonReply>;
  get: (path: string) => Promise<JsonReply>;
  /** POST /v1/transactions/reverse, the answer unchecked. */
  reverse: (body: unknown, request?: JsonRequest) => Promise<JsonReply>;
  /** A reversal expected to succeed: the 200 body, checked against the route's schema. */
  reversed: (body: Record<string, unknown>, request?: JsonRequest) => Promise<ReverseBody>;
  /** A reversal expected to fail with `status`/`code`: the error object. */
  refused: (
    body: unknown,
    status: number,
    code: ErrorCode,
  ) => Promise<{ code: string; message: string; details?: unknown }>;
  /** Creates account `externalId` (extra fields optional). @returns its id */
  account: (externalId: string, fields?: Record<string, unknown>) => Promise<string>;
  /** Adds credits with optional grant terms. @returns the credit's transaction id and its grant id */
  add: (
    ref: string,
    amount: number,
    terms?: Record<string, unknown>,
  ) => Promise<{ transactionId: string; grantId: string }>;
  /** Deducts. @returns the deduction's 200 body */
  deduct: (ref: string, amount: number) => Promise<OkBody<typeof ledgerRoutes.deduct>>;
  /** The account's grants by id. */
  grants: (ref: string) => Promise<Map<string, Grant>>;
  /** The account's ledger entries, oldest first. */
  txns: (ref: string) => Promise<Txn[]>;
  balance: (ref: string) => Promise<{ balance: number; reserved: number; available: number }>;
  /** The ISO instant `ms` after the fake clock's now. */
  isoIn: (ms: number) => string;
  /** Runs the grant expiry job at the fake clock's now. */
  expireJob: () => Promise<{ expiries: number; failed: number }>;
  /** The `data` of the stored webhook events of `type`, oldest first. */
  events: (type: string) => Promise<Record<string, unknown>[]>;
  /** Counts the rows of `table` (the whole database). */
  count: (table: "transactions" | "webhook_events" | "idempotency_keys") => Promise<number>;
}

export type ReverseBody = OkBody<typeof transactionRoutes.reverse>;
export type Grant = OkBody<typeof ledgerRoutes.grants>["grants"][number];
export type Txn = OkBody<typeof transactionRoutes.list>["items"][number];

/** A fresh ledger on a fake clock starting at `start`, listening on a random port. */
export async function reversalLedger(start = "2026-03-02T10:00:00.000Z"): Promise<ReversalLedger> {
  const t = await makeLedger({ fakeClock: start });
  const base = await t.listen();
  const send = fetchFrom(base);
  const post: ReversalLedger["post"] = (path, body, request = {}) =>
    sendJson(send, t.key, "POST", path, { ...request, body });
  const get: ReversalLedger["get"] = (path) => sendJson(send, t.key, "GET", path);
  const reverse: ReversalLedger["reverse"] = (body, request = {}) => post(REVERSE, body, request);
  const q = encodeURIComponent;
  const l: ReversalLedger = {
    t,
    base,
    send,
    post,
    get,
    reverse,
    reversed: async (body, request) =>
      okBody(transactionRoutes.reverse, await reverse(body, request)),
    refused: async (body, status, code) => expectError(await reverse(body), status, code).error,
    account: async (externalId, fields = {}) =>
      okBody(accountRoutes.create, await post("/v1/accounts/create", { externalId, ...fields }))
        .account.id,
    add: async (ref, amount, terms = {}) => {
      const res = okBody(
        ledgerRoutes.add,
        await post("/v1/accounts/credits/add", { accountId: ref, amount, ...terms }),
      );
      return { transactionId: res.transactionId, grantId: res.grantId };
    },
    deduct: async (ref, amount) =>
      okBody(
        ledgerRoutes.deduct,
        await post("/v1/accounts/credits/deduct", { accountId: ref, amount }),
      ),
    grants: async (ref) => {
      const res = await get(`/v1/accounts/grants?accountId=${q(ref)}&limit=1000`);
      return new Map(okBody(ledgerRoutes.grants, res).grants.map((g) => [g.id, g]));
    },
    txns: async (ref) => {
      const res = await get(`/v1/transactions?accountId=${q(ref)}&limit=500`);
      return [...okBody(transactionRoutes.list, res).items].reverse();
    },
    balance: async (ref) => {
      const res = await get(`/v1/accounts/balance?accountId=${q(ref)}`);
      const { balance, reserved, available } = okBody(accountRoutes.balance, res);
      return { balance, reserved, available };
    },
    isoIn: (ms) => new Date(t.now() + ms).toISOString(),
    expireJob: () => runExpireGrants({ queue: t.ledger.queue, nowMs: t.now() }),
    events: async (type) =>
      (
        await t.ledger.db.read
          .selectFrom("webhook_events")
          .select("payload")
          .where("type", "=", type)
          .orderBy("created_at_ms")
          .orderBy("id")
          .execute()
      ).map((e) => (JSON.parse(e.payload) as { data: Record<string, unknown> }).data),
    count: async (table) =>
      Number(
        (
          await t.ledger.db.read
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as("n"))
            .executeTakeFirstOrThrow()
        ).n,
      ),
  };
  return l;
}
