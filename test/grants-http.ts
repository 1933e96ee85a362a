/**
 * Helpers of the credit grant tests: a ledger on a fake clock served over real HTTP (a listening
 * server, called with fetch), and the grant expiry job.
 */
import { expect } from "vitest";
import { runExpireGrants } from "../src/jobs/expire-grants.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

// biome-ignore lint/suspicious/noExplicitAny: response bodies are inspected field by field.
export type Json = any;

export const DAY = 86_400_000;
export const HOUR = 3_600_000;

export interface HttpLedger {
  t: TestLedger;
  /** Calls the running server. @returns status and parsed body */
  http: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: Json }>;
  /** Calls the server and expects a 200. @returns the body */
  ok: (method: string, path: string, body?: unknown) => Promise<Json>;
  /** Calls the server and expects an error. @returns the error object */
  fail: (
    method: string,
    path: string,
    body: unknown,
    status: number,
    code: string,
  ) => Promise<Json>;
  /** The ISO instant `ms` after the fake clock's now. */
  isoIn: (ms: number) => string;
  /** Runs the grant expiry job now. */
  expireJob: () => Promise<{ expiries: number; failed: number }>;
  /** The account's grants (all, newest first). */
  grants: (ref: string) => Promise<Json[]>;
  /** The account's transactions, oldest first. */
  txns: (ref: string) => Promise<Json[]>;
  /** The account's balance view. */
  balance: (ref: string) => Promise<{ balance: number; reserved: number; available: number }>;
  close: () => Promise<void>;
}

/** A ledger on a fake clock starting at `start`, served on a random port. */
export async function httpLedger(start = "2026-03-01T00:00:00Z"): Promise<HttpLedger> {
  const t = await makeLedger({ fakeClock: start });
  const base = await t.listen();
  const http: HttpLedger["http"] = async (method, path, body) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        "X-API-Key": t.key,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
  };
  const ok: HttpLedger["ok"] = async (method, path, body) => {
    const res = await http(method, path, body);
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200);
    return res.body;
  };
  return {
    t,
    http,
    ok,
    fail: async (method, path, body, status, code) => {
      const res = await http(method, path, body);
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(status);
      expect(res.body.error.code).toBe(code);
      return res.body.error;
    },
    isoIn: (ms) => new Date(t.now() + ms).toISOString(),
    expireJob: () => runExpireGrants({ queue: t.ledger.queue, nowMs: t.now() }),
    grants: async (ref) =>
      (await ok("GET", `/v1/accounts/grants?accountId=${encodeURIComponent(ref)}&limit=1000`))
        .grants,
    txns: async (ref) =>
      [
        ...(await ok("GET", `/v1/transactions?accountId=${encodeURIComponent(ref)}&limit=500`))
          .items,
      ].reverse(),
    balance: (ref) => ok("GET", `/v1/accounts/balance?accountId=${encodeURIComponent(ref)}`),
    close: () => t.close(),
  };
}

/** Sum of the grants' `remaining`, in micro-credits (exact). */
export function remainingMicros(grants: Json[]): number {
  return grants.reduce((sum: number, g: Json) => sum + Math.round(g.remaining * 1e6), 0);
}
