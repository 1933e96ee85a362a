/**
 * The service side of the ledger model test: a test ledger (test/harness.ts) on a fake clock,
 * called over real HTTP with exact JSON (amounts written and read as literals), and what the
 * test reads besides answers: the `balance.low` events of the outbox.
 */
import { expect } from "vitest";
import { findRoute, responseProblems } from "../contract.ts";
import { makeLedger, type TestLedger } from "../harness.ts";
import { microsAt, parseLossless, stringAt, stringifyLossless } from "./exact.ts";

/** An answer: status, text, body (numbers kept as literals) and the headers that matter. */
export interface Answer {
  status: number;
  text: string;
  body: unknown;
  retryAfter: string | null;
  replayed: string | null;
}

/** A `balance.low` event as the outbox holds it, amounts as micro-credits. */
export interface SeenEvent {
  id: string;
  ext: string;
  balance: number;
  reserved: number;
  available: number;
  threshold: number;
  transactionId: string | null;
}

export interface Driver {
  t: TestLedger;
  /** Sends a request; `body` may hold `LosslessNumber`s. The answer must match its route's schema. */
  send: (method: string, path: string, body?: unknown, idempotencyKey?: string) => Promise<Answer>;
  /** Every `balance.low` event of the project so far. */
  lowEvents: () => Promise<SeenEvent[]>;
}

/** A ledger on a fake clock at `startMs`, listening on loopback. */
export async function startDriver(startMs: number): Promise<Driver> {
  const t = await makeLedger({ fakeClock: new Date(startMs).toISOString() });
  const base = await t.listen();
  const send: Driver["send"] = async (method, path, body, idempotencyKey) => {
    const headers: Record<string, string> = { "X-API-Key": t.key };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body: stringifyLossless(body) }),
    });
    const text = await res.text();
    const answer = {
      status: res.status,
      text,
      body: parseLossless(text),
      retryAfter: res.headers.get("Retry-After"),
      replayed: res.headers.get("Idempotent-Replayed"),
    };
    // The shape only (a double is fine for that); amounts are compared from the literals.
    const problems = responseProblems(findRoute(t.app, method, path), res.status, JSON.parse(text));
    expect(problems, `${method} ${path} answered off its schema: ${text}`).toEqual([]);
    return answer;
  };
  const lowEvents = async () => {
    const rows = await t.ledger.db.read
      .selectFrom("webhook_events")
      .select(["id", "payload"])
      .where("project_id", "=", t.projectId)
      .where("type", "=", "balance.low")
      .execute();
    return rows.map(({ id, payload }) => {
      const event = parseLossless(payload);
      const money = (path: string) => {
        const micros = microsAt(event, `data.${path}`);
        if (typeof micros !== "number") throw new Error(`balance.low without ${path}: ${payload}`);
        return micros;
      };
      return {
        id,
        ext: stringAt(event, "data.externalId") ?? "(none)",
        balance: money("balance"),
        reserved: money("reserved"),
        available: money("available"),
        threshold: money("threshold"),
        transactionId: stringAt(event, "data.transactionId") ?? null,
      };
    });
  };
  return { t, send, lowEvents };
}
