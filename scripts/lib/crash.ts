/**
 * What the crash tests (scripts/crash-test.ts on SQLite, scripts/crash-test-pg.ts on PostgreSQL)
 * share: the load they send (funded accounts, deductions and reservation create/confirm pairs,
 * each request with its own Idempotency-Key), and the checks of what survived a crash.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { z } from "zod";

export const ACCOUNTS = 20;
export const FUNDING = 1_000_000;
export const DEDUCT = 1;
export const HOLD = 5;
export const ACTUAL = 3;
/** The built CLI (dist/src/cli/index.js beside dist/scripts/). */
export const cli = fileURLToPath(new URL("../../src/cli/index.js", import.meta.url));

/** The fields of an acknowledged write that the checks read. */
const ackSchema = z.object({
  /** A deduction's or a confirm's ledger entry. */
  transactionId: z.string().optional(),
  /** A confirm's reservation. */
  reservationId: z.string().optional(),
  /** A create's reservation. */
  reservation: z.object({ id: z.string() }).optional(),
});
export type Ack = z.infer<typeof ackSchema>;

/** One keyed write sent; `ack` is its 200 answer, if it got one. */
export interface Sent {
  key: string;
  path: string;
  body: Record<string, unknown>;
  ack?: Ack;
}

/** A write's answer: status 0 when the connection failed. */
export interface Answer {
  status: number;
  json: unknown;
}

/** @throws Error with `message` unless `condition` holds */
export function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

/** A 200 answer's body, read as an acknowledgement. @throws Error if it lacks the fields */
export function ackOf(path: string, json: unknown): Ack {
  const ack = ackSchema.parse(json);
  const needed = path.endsWith("/reservations/create") ? ack.reservation : ack.transactionId;
  check(needed !== undefined, `${path} acknowledged without its id: ${JSON.stringify(json)}`);
  return ack;
}

/** POSTs `body` as JSON to `base` with the API key and, when given, an Idempotency-Key. */
export async function postJson(
  base: string,
  apiKey: string,
  path: string,
  body: unknown,
  key?: string,
  signal?: AbortSignal,
): Promise<Answer> {
  const headers: Record<string, string> = {
    "X-API-Key": apiKey,
    "Content-Type": "application/json",
  };
  if (key) headers["Idempotency-Key"] = key;
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers,
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  const json: unknown = await res.json();
  return { status: res.status, json };
}

/** Creates accounts acct-0 … acct-(ACCOUNTS-1), each funded with FUNDING credits. */
export async function fundAccounts(post: (path: string, body: unknown) => Promise<unknown>) {
  for (let i = 0; i < ACCOUNTS; i++) {
    await post("/v1/accounts/create", { externalId: `acct-${i}` });
    await post("/v1/accounts/credits/add", { accountId: `acct-${i}`, amount: FUNDING });
  }
}

/**
 * One step of a client's load on a random account: a deduction, or a reservation then (when it
 * was acknowledged) its confirm.
 */
export async function sendOneWrite(
  write: (path: string, body: Record<string, unknown>) => Promise<Sent>,
): Promise<void> {
  const accountId = `acct-${Math.floor(Math.random() * ACCOUNTS)}`;
  if (Math.random() < 0.5) {
    await write("/v1/accounts/credits/deduct", { accountId, amount: DEDUCT });
    return;
  }
  const hold = await write("/v1/reservations/create", { accountId, amount: HOLD });
  const reservationId = hold.ack?.reservation?.id;
  if (reservationId) {
    await write("/v1/reservations/confirm", { reservationId, actualAmount: ACTUAL });
  }
}

/** What the database holds, for `checkAcknowledged`. */
export interface Stored {
  transactionExists(id: string): Promise<boolean>;
  /** The reservation's status, or undefined when there is none. */
  reservationStatus(id: string): Promise<string | undefined>;
}

/** Every acknowledged deduction, hold and confirm (with its debit) is in the database. */
export async function checkAcknowledged(sent: Sent[], db: Stored): Promise<void> {
  for (const s of sent) {
    const { ack } = s;
    if (!ack) continue;
    if (s.path.endsWith("/deduct")) {
      const found = await db.transactionExists(ack.transactionId ?? "");
      check(found, `acknowledged deduct lost: ${s.key}`);
    } else if (s.path.endsWith("/create")) {
      const status = await db.reservationStatus(ack.reservation?.id ?? "");
      check(status !== undefined, `acknowledged hold lost: ${s.key}`);
    } else {
      const status = await db.reservationStatus(ack.reservationId ?? "");
      check(status === "confirmed", `acknowledged confirm lost: ${s.key}`);
      const found = await db.transactionExists(ack.transactionId ?? "");
      check(found, `confirm debit lost: ${s.key}`);
    }
  }
}

/**
 * Sends again, in order (a confirm only follows its create), every write that was sent but not
 * acknowledged, with its key; each must answer 200. @returns how many
 */
export async function replayUnacknowledged(
  sent: Sent[],
  post: (path: string, body: unknown, key: string) => Promise<Answer>,
): Promise<number> {
  const unacked = sent.filter((s) => !s.ack);
  for (const s of unacked) {
    const { status, json } = await post(s.path, s.body, s.key);
    check(status === 200, `replay of ${s.path} answered ${status}: ${JSON.stringify(json)}`);
  }
  return unacked.length;
}

/** The rows the writes made, as counted in the database. */
export interface Counted {
  deducts: number;
  holds: number;
  confirms: number;
  /** Σ balance_micros of all accounts. */
  balanceMicros: number;
}

/**
 * Each key had exactly one effect (rows = keys sent), and the balances sum to the funding less
 * the deductions and the confirmed amounts.
 */
export function checkTotals(sent: Sent[], rows: Counted): void {
  const keys = (path: string) => sent.filter((s) => s.path.endsWith(path)).length;
  check(rows.deducts === keys("/deduct"), `deductions ${rows.deducts} != keys ${keys("/deduct")}`);
  check(rows.holds === keys("/reservations/create"), `holds ${rows.holds} != keys sent`);
  check(rows.confirms === keys("/confirm"), `confirmations ${rows.confirms} != keys sent`);
  const expected =
    (ACCOUNTS * FUNDING - rows.deducts * DEDUCT - rows.confirms * ACTUAL) * 1_000_000;
  check(
    rows.balanceMicros === expected,
    `balances sum ${rows.balanceMicros} != expected ${expected}`,
  );
}

/** Runs `ledger verify` with `env`. @throws Error unless it passes */
export function checkVerify(env: NodeJS.ProcessEnv): void {
  const verify = spawnSync(process.execPath, [cli, "verify"], { env, encoding: "utf8" });
  check(verify.status === 0, `ledger verify failed: ${verify.stdout}${verify.stderr}`);
}
