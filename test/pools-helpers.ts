/**
 * Helpers of the tests of accounts inside accounts (test/pools.test.ts, contract section 24): a
 * ledger on a fake clock served over real HTTP (a listening server, called with fetch), the calls
 * the tests make, each 200 answer checked against the schema its route declares in the app's
 * OpenAPI registry (found by method and path, so a route still to be built fails as such), the
 * shapes of section 24 as the tests read them, and the stored webhook events.
 */
import { expect } from "vitest";
import type { ErrorCode } from "../src/errors.ts";
import { expectError, findRoute, responseProblems } from "./contract.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** An answer: status, parsed body (the text when it is not JSON), text and headers. */
export interface Reply {
  status: number;
  body: unknown;
  text: string;
  headers: Headers;
}

export type Period = "hour" | "day" | "week" | "month" | "total";

export interface SpendLimit {
  period: Period;
  amount: number;
  timeZone?: string;
  soft?: boolean;
}

/** The Account object with the fields of section 24. */
export interface PoolAccount {
  id: string;
  externalId: string;
  name: string;
  balance: number;
  parentId: string | null;
  funding: "own" | "parent";
  fundedBy: string;
  lowBalanceThreshold: number | null;
  spendLimits: Required<SpendLimit>[];
}

/** The balance read, with `fundedBy`. */
export interface BalanceView {
  accountId: string;
  externalId: string;
  balance: number;
  reserved: number;
  available: number;
  fundedBy: string;
}

/** One limit's current window (section 18; `total`: windowStart and resetsAt null). */
export interface LimitWindow {
  period: Period;
  amount: number;
  timeZone: string;
  soft: boolean;
  windowStart: string | null;
  resetsAt: string | null;
  spent: number;
  held: number;
  remaining: number;
}

export interface Ancestor {
  accountId: string;
  externalId: string;
  limits: LimitWindow[];
}

/** `GET /v1/accounts/limits`, with `ancestors`. */
export interface LimitsView {
  accountId: string;
  externalId: string;
  available: number;
  spendable: number;
  limits: LimitWindow[];
  ancestors: Ancestor[];
}

/** `GET /v1/accounts/check`, with `ancestors`. */
export interface CheckView {
  allowed: boolean;
  code: string | null;
  requested: number;
  available: number;
  spendable: number;
  limits: LimitWindow[];
  ancestors: Ancestor[];
}

/** The Transaction object with `onBehalfOf` and `transferId`. */
export interface Txn {
  id: string;
  accountId: string;
  type: "credit" | "debit";
  amount: number;
  balanceAfter: number;
  metadata: Record<string, unknown>;
  reversalOf: string | null;
  amountReversed: number;
  onBehalfOf: string | null;
  transferId: string | null;
  createdAt: string;
}

export interface Reservation {
  id: string;
  accountId: string;
  amount: number;
  status: string;
  expiresAt: string;
}

export interface Grant {
  id: string;
  accountId: string;
  transactionId: string;
  amount: number;
  remaining: number;
  priority: number;
  expiresAt: string | null;
  status: string;
}

/** `POST /v1/accounts/transfer`'s answer. */
export interface TransferAnswer {
  success: true;
  transferId: string;
  debit: Txn;
  credit: Txn;
  fromBalance: number;
  toBalance: number;
}

/** `POST /v1/transactions/reverse`'s answer. */
export interface ReverseAnswer {
  transaction: Txn;
  reversedTransactionId: string;
  amountReversed: number;
  reversible: number;
  balance: number;
  available: number;
}

/** The error codes of the API, with the two of section 24. */
export type PoolErrorCode = ErrorCode | "FUNDED_BY_PARENT" | "ACCOUNT_BUSY";

/**
 * Asserts that `res` is the API's error `status`/`code` (the checks of `expectError`).
 * @returns the error, its `details` as an object (empty when there are none)
 */
export function refusal(
  res: { status: number; body: unknown },
  status: number,
  code: PoolErrorCode,
): { code: string; message: string; details: Record<string, unknown> } {
  const { error } = expectError(res, status, code as ErrorCode);
  const details = (error.details ?? {}) as Record<string, unknown>;
  return { code: error.code, message: error.message, details };
}

/**
 * Asserts that `res`, the answer of `method` `path` (query ignored), is 200 with the body its
 * route declares and no field the route does not declare. @returns the body as `T`
 */
export function okAnswer<T>(t: TestLedger, res: Reply, method: "GET" | "POST", path: string): T {
  const message = `${method} ${path} → ${res.status} ${res.text}`;
  expect(res.status, message).toBe(200);
  expect(responseProblems(findRoute(t.app, method, path), 200, res.body), message).toEqual([]);
  return res.body as T;
}

export interface PoolLedger {
  t: TestLedger;
  base: string;
  /** Any request to the listening server with the project's key (or `key`). */
  request: (
    method: string,
    path: string,
    body?: unknown,
    options?: { key?: string; base?: string },
  ) => Promise<Reply>;
  post: (path: string, body: unknown) => Promise<Reply>;
  get: (path: string) => Promise<Reply>;
  /** POST expected to answer 200: the body, checked against its route's schema. */
  posted: <T>(path: string, body: unknown) => Promise<T>;
  /** GET expected to answer 200: the body, checked against its route's schema. */
  read: <T>(path: string) => Promise<T>;
  /** Creates account `externalId` with `fields` (parentId, funding, spendLimits, …). */
  create: (externalId: string, fields?: Record<string, unknown>) => Promise<PoolAccount>;
  /** `POST /v1/accounts/update` expected to succeed. @returns the updated account */
  update: (accountId: string, fields: Record<string, unknown>) => Promise<PoolAccount>;
  /** `GET /v1/accounts/get`. */
  account: (ref: string) => Promise<PoolAccount>;
  /** Adds credits with optional grant terms. */
  add: (
    ref: string,
    amount: number,
    terms?: Record<string, unknown>,
  ) => Promise<{ transactionId: string; grantId: string; balance: number }>;
  deduct: (ref: string, amount: number) => Promise<{ transactionId: string; balance: number }>;
  /** `POST /v1/accounts/credits/deduct`, the answer unchecked. */
  tryDeduct: (ref: string, amount: number) => Promise<Reply>;
  reserve: (ref: string, amount: number, extra?: Record<string, unknown>) => Promise<Reservation>;
  /** `POST /v1/reservations/create`, the answer unchecked. */
  tryReserve: (ref: string, amount: number) => Promise<Reply>;
  confirm: (
    reservationId: string,
    actualAmount: number,
  ) => Promise<{ transactionId: string; balance: number }>;
  cancel: (reservationId: string) => Promise<{ amountReleased: number; accountId: string }>;
  balance: (ref: string) => Promise<BalanceView>;
  limits: (ref: string) => Promise<LimitsView>;
  check: (ref: string, amount: number) => Promise<CheckView>;
  /** `GET /v1/transactions` with `query`, oldest first. */
  txns: (query: Record<string, string>) => Promise<Txn[]>;
  /** The account's grants, newest first. */
  grants: (ref: string) => Promise<Grant[]>;
  /** `POST /v1/accounts/transfer`, the answer unchecked. */
  transfer: (body: Record<string, unknown>) => Promise<Reply>;
  /** A transfer expected to succeed. */
  transferred: (body: Record<string, unknown>) => Promise<TransferAnswer>;
  /** The ISO instant `ms` after the fake clock's now. */
  isoIn: (ms: number) => string;
  /** Subscribes a webhook (a closed loopback port) to `events`, so that they are stored. */
  subscribe: (events: string[]) => Promise<void>;
  /** The `data` of the stored webhook events of `type`, oldest first. */
  events: (type: string) => Promise<Record<string, unknown>[]>;
}

/** A fresh ledger on a fake clock starting at `start`, listening on a random port. */
export async function poolLedger(start = "2026-03-02T10:00:00.000Z"): Promise<PoolLedger> {
  const t = await makeLedger({ fakeClock: start });
  const base = await t.listen();
  const q = encodeURIComponent;
  const request: PoolLedger["request"] = async (method, path, body, options = {}) => {
    const headers: Record<string, string> = { "X-API-Key": options.key ?? t.key };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(`${options.base ?? base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed, text, headers: res.headers };
  };
  const post: PoolLedger["post"] = (path, body) => request("POST", path, body);
  const get: PoolLedger["get"] = (path) => request("GET", path);
  const posted = async <T>(path: string, body: unknown) =>
    okAnswer<T>(t, await post(path, body), "POST", path);
  const read = async <T>(path: string) => okAnswer<T>(t, await get(path), "GET", path);
  const transfer: PoolLedger["transfer"] = (body) => post("/v1/accounts/transfer", body);
  return {
    t,
    base,
    request,
    post,
    get,
    posted,
    read,
    create: async (externalId, fields = {}) =>
      (
        await posted<{ account: PoolAccount }>("/v1/accounts/create", {
          externalId,
          ...fields,
        })
      ).account,
    update: async (accountId, fields) =>
      (await posted<{ account: PoolAccount }>("/v1/accounts/update", { accountId, ...fields }))
        .account,
    account: (ref) => read<PoolAccount>(`/v1/accounts/get?accountId=${q(ref)}`),
    add: (ref, amount, terms = {}) =>
      posted("/v1/accounts/credits/add", { accountId: ref, amount, ...terms }),
    deduct: (ref, amount) => posted("/v1/accounts/credits/deduct", { accountId: ref, amount }),
    tryDeduct: (ref, amount) => post("/v1/accounts/credits/deduct", { accountId: ref, amount }),
    reserve: async (ref, amount, extra = {}) =>
      (
        await posted<{ reservation: Reservation }>("/v1/reservations/create", {
          accountId: ref,
          amount,
          ...extra,
        })
      ).reservation,
    tryReserve: (ref, amount) => post("/v1/reservations/create", { accountId: ref, amount }),
    confirm: (reservationId, actualAmount) =>
      posted("/v1/reservations/confirm", { reservationId, actualAmount }),
    cancel: (reservationId) => posted("/v1/reservations/cancel", { reservationId }),
    balance: (ref) => read<BalanceView>(`/v1/accounts/balance?accountId=${q(ref)}`),
    limits: (ref) => read<LimitsView>(`/v1/accounts/limits?accountId=${q(ref)}`),
    check: (ref, amount) =>
      read<CheckView>(`/v1/accounts/check?accountId=${q(ref)}&amount=${amount}`),
    txns: async (query) => {
      const res = await read<{ items: Txn[] }>(
        `/v1/transactions?${new URLSearchParams({ limit: "500", ...query })}`,
      );
      return [...res.items].reverse();
    },
    grants: async (ref) =>
      (await read<{ grants: Grant[] }>(`/v1/accounts/grants?accountId=${q(ref)}&limit=1000`))
        .grants,
    transfer,
    transferred: async (body) =>
      okAnswer<TransferAnswer>(t, await transfer(body), "POST", "/v1/accounts/transfer"),
    isoIn: (ms) => new Date(t.now() + ms).toISOString(),
    subscribe: async (events) => {
      const res = await post("/v1/webhooks/create", { url: "http://127.0.0.1:9/hook", events });
      expect(res.status, res.text).toBe(200);
    },
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
  };
}
