/**
 * Batches (docs/api.md#batches, contract section 19) over real HTTP: malformed batches, each
 * operation's own status and body, operations seeing those before them, atomic batches that
 * leave no trace, idempotency per operation and for the whole batch, and concurrent batches on
 * one account. Runs on SQLite, and on PostgreSQL when LEDGER_TEST_PG_URL is set.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { batchRoutes } from "../src/batch/routes.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { responseProblems } from "./contract.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

interface Result {
  index: number;
  status: number;
  replayed: boolean;
  body: { success: boolean; error?: { code: string; details?: unknown }; [k: string]: unknown };
}
interface BatchBody {
  success: true;
  atomic: boolean;
  committed: number;
  results: Result[];
}
interface Answer {
  status: number;
  body: unknown;
  text: string;
  headers: Headers;
}

const ADD = "/v1/accounts/credits/add";
const DEDUCT = "/v1/accounts/credits/deduct";
const CREATE = "/v1/accounts/create";

describe("batches", () => {
  let t: TestLedger;
  let base: string;
  beforeEach(async () => {
    t = await makeLedger();
    base = await t.listen();
  });
  afterEach(async () => {
    expect(await t.verify()).toEqual([]);
    await t.close();
  });

  /** POSTs `body` (a value, or text as given) to `path` over HTTP. */
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "X-API-Key": t.key, "Content-Type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text), text, headers: res.headers } as Answer;
  };
  /** Runs a well-formed batch: expects 200 with the documented body. @returns it */
  const batch = async (body: unknown, headers: Record<string, string> = {}) => {
    const res = await post("/v1/batch", body, headers);
    expect(res.status, res.text).toBe(200);
    expect(responseProblems(batchRoutes.run, 200, res.body)).toEqual([]);
    return res.body as BatchBody;
  };
  const balanceOf = async (externalId: string) => {
    const res = await t.client.GET("/v1/accounts/balance", { params: { query: { externalId } } });
    return res.data?.balance;
  };
  const count = async (table: "transactions" | "webhook_events" | "accounts") =>
    Number(
      (
        await t.ledger.db.read
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as("n"))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const storedKeys = async (keys: string[]) =>
    (
      await t.ledger.db.read
        .selectFrom("idempotency_keys")
        .select("idempotency_key")
        .where("idempotency_key", "in", keys)
        .execute()
    ).map((r) => r.idempotency_key);

  describe("a malformed batch is a 400 naming the field, and nothing runs", () => {
    const create = { path: CREATE, body: { externalId: "never" } };
    const cases: [string, unknown, string][] = [
      ["not an object", [create], "body"],
      ["no operations", {}, "body.operations"],
      ["empty operations", { operations: [] }, "body.operations"],
      ["over 1,000 operations", { operations: Array(1001).fill(create) }, "body.operations"],
      [
        "an unknown path",
        { operations: [create, create, create, { path: "/v1/plans/create", body: {} }] },
        "body.operations.3.path",
      ],
      [
        "a body that is an array",
        { operations: [create, { path: ADD, body: [] }] },
        "body.operations.1.body",
      ],
      [
        "a body that is a number",
        { operations: [create, { path: ADD, body: 5 }] },
        "body.operations.1.body",
      ],
      ["no body", { operations: [create, { path: ADD }] }, "body.operations.1.body"],
      [
        "an empty idempotencyKey",
        { operations: [create, { ...create, idempotencyKey: "" }] },
        "body.operations.1.idempotencyKey",
      ],
      [
        "an idempotencyKey of 256 characters",
        { operations: [{ ...create, idempotencyKey: "k".repeat(256) }] },
        "body.operations.0.idempotencyKey",
      ],
      ["an atomic that is not a boolean", { atomic: "yes", operations: [create] }, "body.atomic"],
    ];
    it.each(cases)("%s", async (_name, body, field) => {
      const res = await post("/v1/batch", body);
      expect(res.status, res.text).toBe(400);
      expect(responseProblems(batchRoutes.run, 400, res.body)).toEqual([]);
      const details = (res.body as { error: { code: string; details: { path: string }[] } }).error;
      expect(details.code).toBe("VALIDATION_ERROR");
      expect(details.details.map((d) => d.path)).toContain(field);
      expect(await count("accounts")).toBe(0);
    });

    it("takes up to 1 MiB (1,000 operations), 413 beyond", async () => {
      const ops = Array.from({ length: 1000 }, (_, i) => ({
        path: CREATE,
        body: { externalId: `bulk-${i}`, name: "n".repeat(200) },
      }));
      const body = JSON.stringify({ operations: ops });
      expect(body.length).toBeGreaterThan(64 * 1024);
      expect(body.length).toBeLessThan(1024 * 1024);
      const done = await batch(body);
      expect(done.committed).toBe(1000);
      const big = await post("/v1/batch", {
        operations: [{ ...ops[0], pad: "x".repeat(1 << 20) }],
      });
      expect(big.status).toBe(413);
      expect(big.body).toMatchObject({ error: { code: "PAYLOAD_TOO_LARGE" } });
    });
  });

  it("answers each operation's own status and body, and each sees those before it", async () => {
    const alone = await post(DEDUCT, { accountId: "nobody", amount: 1 });
    const done = await batch({
      operations: [
        { path: CREATE, body: { externalId: "ada" } },
        { path: ADD, body: { accountId: "ada", amount: 10 } },
        { path: DEDUCT, body: { accountId: "ada", amount: 25 } },
        { path: DEDUCT, body: { accountId: "ada", amount: 2.5 } },
        { path: DEDUCT, body: { accountId: "ada", amount: -1 } },
        { path: DEDUCT, body: { accountId: "nobody", amount: 1 } },
        { path: CREATE, body: { externalId: "ada" } },
        { path: CREATE, body: { externalId: "big", junk: "x".repeat(70 * 1024) } },
      ],
    });
    expect(done.atomic).toBe(false);
    expect(done.results.map((r) => r.status)).toEqual([200, 200, 402, 200, 400, 404, 409, 413]);
    expect(done.results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(done.committed).toBe(3);
    const [created, added, refused, deducted, invalid, missing] = done.results;
    expect(responseProblems(accountRoutes.create, 200, created?.body)).toEqual([]);
    expect(responseProblems(ledgerRoutes.add, 200, added?.body)).toEqual([]);
    expect(added?.body).toMatchObject({ externalId: "ada", balance: 10, added: 10 });
    expect(refused?.body.error).toMatchObject({
      code: "INSUFFICIENT_CREDITS",
      details: { available: 10, requested: 25 },
    });
    expect(responseProblems(ledgerRoutes.deduct, 200, deducted?.body)).toEqual([]);
    expect(deducted?.body).toMatchObject({ balance: 7.5, deducted: 2.5 });
    expect(invalid?.body.error).toMatchObject({ code: "VALIDATION_ERROR" });
    expect(JSON.stringify(invalid?.body.error?.details)).toContain("body.amount");
    // The same body sent alone answers the same error body.
    expect(missing?.body).toEqual(alone.body);
    expect(await balanceOf("ada")).toBe(7.5);
  });

  it("runs deductions in order around one that is not plain, as single requests would", async () => {
    // 10 credits, low-balance threshold 5: the second deduction crosses it (general path, with
    // the event), the fourth is refused; the others are plain. Single requests on "solo" are
    // the yardstick for the batch on "seq" (a batch groups the plain ones: plain-debits.ts).
    const amounts = [3, 3, 1, 5, 2];
    await t.client.POST("/v1/webhooks/create", {
      body: { url: "http://127.0.0.1:9/hook", events: ["balance.low"] },
    });
    for (const name of ["solo", "seq", "atom"]) {
      await fundedAccount(t, name, 10);
      await post("/v1/accounts/update", { accountId: name, lowBalanceThreshold: 5 });
    }
    const alone = [];
    for (const amount of amounts) alone.push(await post(DEDUCT, { accountId: "solo", amount }));
    const deducts = (name: string, list: number[]) =>
      list.map((amount) => ({ path: DEDUCT, body: { accountId: name, amount } }));
    const done = await batch({ operations: deducts("seq", amounts) });
    expect(done.results.map((r) => r.status)).toEqual(alone.map((a) => a.status));
    expect(done.results.map((r) => r.status)).toEqual([200, 200, 200, 402, 200]);
    const balances = (list: { body: unknown }[]) =>
      list.map((r) => (r.body as { balance?: number }).balance);
    expect(balances(done.results)).toEqual(balances(alone));
    expect(balances(done.results)).toEqual([7, 4, 3, undefined, 1]);
    expect(done.results[3]?.body).toEqual(alone[3]?.body);
    expect(done.committed).toBe(4);
    const atomic = await batch({ atomic: true, operations: deducts("atom", [3, 3, 1, 2]) });
    expect(atomic.committed).toBe(4);
    expect(balances(atomic.results)).toEqual([7, 4, 3, 1]);
    const events = await t.ledger.db.read
      .selectFrom("webhook_events")
      .select("payload")
      .where("type", "=", "balance.low")
      .execute();
    for (const name of ["solo", "seq", "atom"]) {
      expect(events.filter((e) => e.payload.includes(`"${name}"`))).toHaveLength(1);
    }
    // A manual debit's plain path is the same debit: it runs in the same way, in order.
    const described = { accountId: "seq", amount: 0.25, description: "manual", metadata: { n: 1 } };
    const mixed = await batch({
      operations: [
        { path: "/v1/transactions/create", body: { ...described, type: "debit" } },
        { path: DEDUCT, body: { accountId: "seq", amount: 0.5 } },
        { path: "/v1/transactions/create", body: { ...described, type: "debit" } },
      ],
    });
    expect(mixed.results.map((r) => r.status)).toEqual([200, 200, 200]);
    const manual = mixed.results[0]?.body.transaction as Record<string, unknown> | undefined;
    expect(manual).toMatchObject({ amount: 0.25, balanceAfter: 0.75, type: "debit" });
    expect(manual).toMatchObject({ description: "manual", metadata: { n: 1 } });
    expect(balances(mixed.results.slice(1, 2))).toEqual([0.25]);
    expect(await balanceOf("seq")).toBe(0);
  });

  it("makes a run of debits over several accounts as single requests would, in order", async () => {
    // Four accounts of 10 credits in a batch and four twins sent single requests: "b" has a
    // low-balance threshold of 5 that its third debit crosses (general path, with the event),
    // "c"'s third debit is refused, "d" holds two grants (3, then 7) and its first runs out
    // exactly between two debits, "a" is also named by its internal id (which cuts SQLite's
    // grouped run, src/ledger/plain-run.ts). Everything must match the single requests.
    await t.client.POST("/v1/webhooks/create", {
      body: { url: "http://127.0.0.1:9/hook", events: ["balance.low"] },
    });
    const ids: Record<string, string> = {};
    for (const side of ["batch", "solo"]) {
      for (const name of ["a", "b", "c"]) {
        ids[`${side}-${name}`] = await fundedAccount(t, `${side}-${name}`, 10);
      }
      await fundedAccount(t, `${side}-d`, 3);
      await post(ADD, { accountId: `${side}-d`, amount: 7 });
      await post("/v1/accounts/update", { accountId: `${side}-b`, lowBalanceThreshold: 5 });
    }
    const steps: [string, number, boolean?][] = [
      ["a", 2],
      ["b", 1],
      ["c", 1],
      ["d", 2],
      ["a", 1],
      ["b", 1],
      ["c", 1],
      ["d", 1],
      ["d", 2],
      ["b", 3.5],
      ["c", 20],
      ["a", 1, true],
      ["b", 0.5],
      ["c", 4],
      ["a", 1.25],
    ];
    const body = (side: string, [name, amount, byId]: [string, number, boolean?]) => ({
      accountId: byId ? ids[`${side}-${name}`] : `${side}-${name}`,
      amount,
    });
    const alone: Answer[] = [];
    for (const step of steps) alone.push(await post(DEDUCT, body("solo", step)));
    const done = await batch({
      operations: steps.map((step) => ({ path: DEDUCT, body: body("batch", step) })),
    });
    expect(done.results.map((r) => r.status)).toEqual(alone.map((a) => a.status));
    expect(done.results.map((r) => r.status).filter((s) => s !== 200)).toEqual([402]);
    expect(done.results[10]?.body).toEqual(alone[10]?.body);
    const balances = (list: { body: unknown }[]) =>
      list.map((r) => (r.body as { balance?: number }).balance);
    expect(balances(done.results)).toEqual(balances(alone));
    expect(balances(done.results)).toEqual([
      8,
      9,
      9,
      8,
      7,
      8,
      8,
      7,
      5,
      4.5,
      undefined,
      6,
      4,
      4,
      4.75,
    ]);
    // The batch's entries follow the operations' order, each with its running balance.
    const entries = await t.ledger.db.read
      .selectFrom("transactions")
      .innerJoin("accounts", "accounts.id", "transactions.account_id")
      .select(["accounts.external_id", "amount_micros", "balance_after_micros"])
      .where("accounts.external_id", "like", "batch-%")
      .where("type", "=", "debit")
      .orderBy("seq")
      .execute();
    const ok = steps.filter((_, i) => alone[i]?.status === 200);
    expect(entries.map((e) => [e.external_id, Number(e.amount_micros) / 1e6])).toEqual(
      ok.map(([name, amount]) => [`batch-${name}`, amount]),
    );
    expect(entries.map((e) => Number(e.balance_after_micros) / 1e6)).toEqual(
      balances(done.results).filter((b) => b !== undefined),
    );
    const grants = async (accountId: string) => {
      const res = await t.client.GET("/v1/accounts/grants", { params: { query: { accountId } } });
      return res.data?.grants.map((g) => [g.amount, g.remaining]);
    };
    expect(await grants("batch-d")).toEqual(await grants("solo-d"));
    expect(await grants("batch-d")).toEqual([
      [7, 5],
      [3, 0],
    ]);
    const events = await t.ledger.db.read
      .selectFrom("webhook_events")
      .select("payload")
      .where("type", "=", "balance.low")
      .execute();
    for (const side of ["batch", "solo"]) {
      expect(events.filter((e) => e.payload.includes(`"${side}-b"`))).toHaveLength(1);
    }
  });

  it("atomic: one failure aborts all, and nothing of the batch is kept", async () => {
    await fundedAccount(t, "lin", 50);
    await t.client.POST("/v1/accounts/update", {
      body: { accountId: "lin", lowBalanceThreshold: 20 },
    });
    await t.client.POST("/v1/webhooks/create", {
      body: { url: "http://127.0.0.1:9/hook", events: ["balance.low"] },
    });
    const before = { txns: await count("transactions"), events: await count("webhook_events") };
    const ops = [
      { path: ADD, body: { accountId: "lin", amount: 5 }, idempotencyKey: "a-0" },
      { path: DEDUCT, body: { accountId: "lin", amount: 40 }, idempotencyKey: "a-1" },
      { path: CREATE, body: { externalId: "lin-2" }, idempotencyKey: "a-2" },
      { path: DEDUCT, body: { accountId: "lin", amount: 100 }, idempotencyKey: "a-3" },
      { path: ADD, body: { accountId: "lin-2", amount: 1 }, idempotencyKey: "a-4" },
    ];
    const done = await batch({ atomic: true, operations: ops });
    expect(done).toMatchObject({ atomic: true, committed: 0 });
    expect(done.results.map((r) => r.status)).toEqual([409, 409, 409, 402, 409]);
    for (const r of done.results.filter((r) => r.index !== 3)) {
      expect(r.body.error).toMatchObject({ code: "BATCH_ABORTED", details: { failedIndex: 3 } });
    }
    expect(done.results[3]?.body.error?.code).toBe("INSUFFICIENT_CREDITS");
    expect(await balanceOf("lin")).toBe(50);
    expect((await post("/v1/accounts/balance", {})).status).not.toBe(200);
    expect(await count("transactions")).toBe(before.txns);
    expect(await count("webhook_events")).toBe(before.events);
    expect(await storedKeys(ops.map((o) => o.idempotencyKey))).toEqual([]);
    const missing = await t.client.GET("/v1/accounts/balance", {
      params: { query: { externalId: "lin-2" } },
    });
    expect(missing.response.status).toBe(404);

    // A validation failure aborts where array order reaches it, with its own 400; what ran
    // before it is rolled back.
    const invalid = await batch({ atomic: true, operations: [ops[0], { path: ADD, body: {} }] });
    expect(invalid.results.map((r) => r.status)).toEqual([409, 400]);
    expect(invalid.results[0]?.body.error).toMatchObject({ details: { failedIndex: 1 } });
    expect(await storedKeys(["a-0"])).toEqual([]);
    expect(await balanceOf("lin")).toBe(50);

    // The first failure in array order is the batch's failure, even when a later operation's
    // body is refused before anything runs (issue 50): the deduction's own 402 at index 0.
    await fundedAccount(t, "batch-1", 0);
    const ordered = await batch({
      atomic: true,
      operations: [
        { path: DEDUCT, body: { accountId: "batch-1", amount: 5 } },
        { path: ADD, body: { accountId: "batch-1", amount: "5" } },
      ],
    });
    expect(ordered.results.map((r) => r.status)).toEqual([402, 409]);
    expect(ordered.results[0]?.body.error?.code).toBe("INSUFFICIENT_CREDITS");
    expect(ordered.results[1]?.body.error).toMatchObject({
      code: "BATCH_ABORTED",
      details: { failedIndex: 0 },
    });
    expect(ordered.committed).toBe(0);
    expect(await balanceOf("batch-1")).toBe(0);

    // The same batch without the failing operation commits whole, event included.
    const fixed = await batch({ atomic: true, operations: ops.filter((_, i) => i !== 3) });
    expect(fixed.committed).toBe(4);
    expect(fixed.results.every((r) => r.status === 200)).toBe(true);
    expect(await balanceOf("lin")).toBe(15);
    expect(await balanceOf("lin-2")).toBe(1);
    expect(await count("webhook_events")).toBe(before.events + 1);
    expect((await storedKeys(ops.map((o) => o.idempotencyKey))).sort()).toEqual([
      "a-0",
      "a-1",
      "a-2",
      "a-4",
    ]);
  });

  it("shares the key space with single requests, whichever comes first", async () => {
    await fundedAccount(t, "kim", 0);
    const add = { accountId: "kim", amount: 3 };
    const single = await post(ADD, add, { "Idempotency-Key": "k-1" });
    expect(single.status).toBe(200);
    const first = await batch({ operations: [{ path: ADD, body: add, idempotencyKey: "k-1" }] });
    expect(first.results[0]).toMatchObject({ status: 200, replayed: true, body: single.body });
    expect(first.committed).toBe(0);

    const second = await batch({ operations: [{ path: ADD, body: add, idempotencyKey: "k-2" }] });
    expect(second.results[0]).toMatchObject({ status: 200, replayed: false });
    const replay = await post(ADD, { amount: 3, accountId: "kim" }, { "Idempotency-Key": "k-2" });
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.body).toEqual(second.results[0]?.body);

    const other = await batch({
      operations: [
        { path: ADD, body: { accountId: "kim", amount: 4 }, idempotencyKey: "k-1" },
        { path: DEDUCT, body: add, idempotencyKey: "k-2" },
      ],
    });
    expect(other.results.map((r) => r.body.error?.code)).toEqual([
      "IDEMPOTENCY_KEY_REUSED",
      "IDEMPOTENCY_KEY_REUSED",
    ]);
    expect(await balanceOf("kim")).toBe(6);
  });

  it("replays the first of one key twice in a batch, or 409 for another body", async () => {
    await fundedAccount(t, "eve", 0);
    const add = { accountId: "eve", amount: 2 };
    const done = await batch({
      operations: [
        { path: ADD, body: add, idempotencyKey: "twice" },
        { path: ADD, body: add, idempotencyKey: "twice" },
        { path: ADD, body: { ...add, amount: 9 }, idempotencyKey: "twice" },
      ],
    });
    expect(done.results.map((r) => [r.status, r.replayed])).toEqual([
      [200, false],
      [200, true],
      [409, false],
    ]);
    expect(done.results[1]?.body).toEqual(done.results[0]?.body);
    expect(done.results[2]?.body.error?.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(done.committed).toBe(1);
    expect(await balanceOf("eve")).toBe(2);
  });

  it("replays a whole batch by its Idempotency-Key, stored only when every operation succeeded", async () => {
    await fundedAccount(t, "max", 5);
    const body = {
      operations: [
        { path: DEDUCT, body: { accountId: "max", amount: 1 } },
        { path: ADD, body: { accountId: "max", amount: 0.25 } },
      ],
    };
    const first = await post("/v1/batch", body, { "Idempotency-Key": "whole" });
    const again = await post("/v1/batch", body, { "Idempotency-Key": "whole" });
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.text).toBe(first.text);
    expect(await balanceOf("max")).toBe(4.25);
    const changed = await post(
      "/v1/batch",
      { operations: body.operations.slice(1) },
      {
        "Idempotency-Key": "whole",
      },
    );
    expect(changed.status).toBe(409);

    const failing = { operations: [{ path: DEDUCT, body: { accountId: "max", amount: 10 } }] };
    const refused = await batch(failing, { "Idempotency-Key": "partial" });
    expect(refused.results[0]?.status).toBe(402);
    await post(ADD, { accountId: "max", amount: 10 });
    const retried = await batch(failing, { "Idempotency-Key": "partial" });
    expect(retried.results[0]?.status).toBe(200);
    expect(await balanceOf("max")).toBe(4.25);
  });

  it("is described as a union discriminated by path, which the typed client checks", async () => {
    const doc = (await t.api("GET", "/openapi.json", { key: null })).body as {
      paths: Record<string, { post?: { operationId?: string; requestBody?: unknown } }>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    expect(doc.paths["/v1/batch"]?.post?.operationId).toBe("runBatch");
    const operations = doc.components.schemas.BatchRequest?.properties?.operations as {
      items: {
        discriminator: { propertyName: string };
        oneOf: { properties: { path: { enum: string[] }; body: { $ref: string } } }[];
      };
    };
    expect(operations.items.discriminator.propertyName).toBe("path");
    const byPath = Object.fromEntries(
      operations.items.oneOf.map((o) => [o.properties.path.enum[0], o.properties.body.$ref]),
    );
    expect(byPath).toEqual({
      "/v1/accounts/create": "#/components/schemas/CreateAccountRequest",
      "/v1/accounts/update": "#/components/schemas/UpdateAccountRequest",
      "/v1/accounts/credits/add": "#/components/schemas/AddCreditsRequest",
      "/v1/accounts/credits/deduct": "#/components/schemas/DeductCreditsRequest",
      "/v1/transactions/create": "#/components/schemas/CreateTransactionRequest",
      "/v1/transactions/reverse": "#/components/schemas/ReverseTransactionRequest",
      "/v1/reservations/create": "#/components/schemas/CreateReservationRequest",
      "/v1/reservations/confirm": "#/components/schemas/ConfirmReservationRequest",
      "/v1/reservations/cancel": "#/components/schemas/CancelReservationRequest",
      "/v1/usage/record": "#/components/schemas/RecordUsageRequest",
      "/v1/accounts/transfer": "#/components/schemas/TransferRequest",
    });

    await fundedAccount(t, "typed", 3);
    const client = t.clientFor(t.key, base);
    const { data } = await client.POST("/v1/batch", {
      body: { operations: [{ path: DEDUCT, body: { accountId: "typed", amount: 1 } }] },
    });
    expect(data?.results[0]?.status).toBe(200);
    expect(data?.committed).toBe(1);
    const wrong = () =>
      client.POST("/v1/batch", {
        body: {
          // @ts-expect-error: a deduction's body has no externalId and needs accountId and amount
          operations: [{ path: DEDUCT, body: { externalId: "typed" } }],
        },
      });
    expect(typeof wrong).toBe("function");
  });

  it("never double-spends under 10 concurrent batches on one account", async () => {
    await fundedAccount(t, "hot", 100);
    const deductions = (n: number) =>
      Array.from({ length: n }, () => ({ path: DEDUCT, body: { accountId: "hot", amount: 1 } }));
    const independent = await Promise.all(
      Array.from({ length: 10 }, () => batch({ operations: deductions(30) })),
    );
    const ok = independent.flatMap((b) => b.results).filter((r) => r.status === 200);
    expect(ok).toHaveLength(100);
    expect(independent.reduce((sum, b) => sum + b.committed, 0)).toBe(100);
    expect(await balanceOf("hot")).toBe(0);

    await post(ADD, { accountId: "hot", amount: 100 });
    const atomic = await Promise.all(
      Array.from({ length: 10 }, () => batch({ atomic: true, operations: deductions(15) })),
    );
    expect(atomic.filter((b) => b.committed === 15)).toHaveLength(6);
    expect(atomic.filter((b) => b.committed === 0)).toHaveLength(4);
    expect(await balanceOf("hot")).toBe(10);
  });
});
