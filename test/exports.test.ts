/**
 * The exports (`GET /v1/transactions/export`, `GET /v1/usage/export`; docs/api.md#exports) over
 * real HTTP: RFC 4180 quoting and formula-injection guarding, exact numbers, the same rows as
 * the list routes for the same filters (in exactly the reverse order), NDJSON lines that are the
 * list's items, the list's 400s and 404s before any row, no duplicate and no gap while writes go
 * on, and a client disconnect stopping the export (seen in its metrics: no page read after it).
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendDebits } from "../scripts/lib/bulk-ledger.ts";
import { accountRoutes } from "../src/accounts/routes.ts";
import { parseJsonText, parseJsonVerbatim, stringifyJson, stringifyJsonFast } from "../src/json.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { ExactDecimal, microsToLiteral, scaledToLiteral } from "../src/money.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { expectError } from "./contract.ts";
import { fundedAccount, makeLedger, type TestLedger } from "./harness.ts";

const DAY_MS = 86_400_000;
const START = Date.parse("2026-10-01T00:00:00Z");
/** Rows of the big account: about 20 MB of CSV, far more than the socket buffers take at once. */
const BIG_ROWS = 10_000;
// Each big-export row carries about 7 KB, so that its 10,000 rows (about 70 MB) are more than
// loopback's socket buffers can hold (up to 32 MiB received and 4 MiB sent here): a paused
// client then really holds the export back.
const PAD = "p".repeat(7000);

/** A raw answer of a GET over HTTP. */
interface Raw {
  status: number;
  type: string;
  disposition: string;
  text: string;
}

/** Parses RFC 4180 CSV (CRLF records, quoted fields); @throws on a malformed file. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let i = 0;
  while (i < text.length) {
    const record: string[] = [];
    for (;;) {
      let field = "";
      if (text[i] === '"') {
        i++;
        for (;;) {
          const quote = text.indexOf('"', i);
          if (quote < 0) throw new Error("unterminated quoted field");
          field += text.slice(i, quote);
          i = quote + 1;
          if (text[i] !== '"') break;
          field += '"';
          i++;
        }
      } else {
        const end = text.slice(i).search(/,|\r\n/);
        if (end < 0) throw new Error("record without CRLF");
        field = text.slice(i, i + end);
        if (/["\r\n]/.test(field)) throw new Error(`unquoted field with a quote or line end`);
        i += end;
      }
      record.push(field);
      if (text[i] === ",") {
        i++;
        continue;
      }
      if (text.slice(i, i + 2) !== "\r\n") throw new Error(`no CRLF after a field at ${i}`);
      i += 2;
      break;
    }
    records.push(record);
  }
  return records;
}

/** CSV records as objects keyed by the header row. */
function csvObjects(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  if (!header) throw new Error("no header row");
  return rows.map((row) => {
    expect(row).toHaveLength(header.length);
    return Object.fromEntries(header.map((name, k) => [name, row[k] ?? ""]));
  });
}

describe("the exports' fast writers", () => {
  it("write exactly what stringifyJson and scaledToLiteral write", () => {
    const values: unknown[] = [
      null,
      true,
      0,
      -0,
      1e21,
      0.1,
      'é\u2028"\\\n',
      new ExactDecimal("8600000000.000001"),
      parseJsonText(
        '{"a":[1,0.30000000000000001,{"__proto__":{"x":12345678901234567890}}],"b":null}',
      ),
      { a: undefined, b: [undefined, 1], "\u0000": "z", nested: { deep: [[], {}] } },
      transactionItemSample(),
    ];
    for (const value of values) expect(stringifyJsonFast(value)).toBe(stringifyJson(value));
    const micros = [0, 1, 9, 10, 999_999, 1_000_000, 1_000_001, 300_000, 8_600_000_000_000_001];
    for (const m of [...micros, ...micros.map((x) => -x), Number.MAX_SAFE_INTEGER]) {
      expect(microsToLiteral(m)).toBe(scaledToLiteral(BigInt(m), 6));
    }
  });
});

/** A Transaction object as the list writes it. */
function transactionItemSample() {
  return {
    id: "txn_1",
    amount: new ExactDecimal("0.3"),
    metadata: parseJsonText('{"k":"v","n":1.5}'),
    reservation: null,
  };
}

describe("exports", () => {
  let t: TestLedger;
  let base: string;
  let big: string;
  /** The ids of the big account's entries, in ledger order. */
  let bigIds: string[];

  const get = async (path: string, query: Record<string, string> = {}, key = t.key) => {
    const qs = new URLSearchParams(query).toString();
    const res = await fetch(`${base}${path}${qs ? `?${qs}` : ""}`, {
      headers: { "X-API-Key": key },
    });
    return {
      status: res.status,
      type: res.headers.get("content-type") ?? "",
      disposition: res.headers.get("content-disposition") ?? "",
      text: await res.text(),
    } satisfies Raw;
  };

  /** The value of a counter of /metrics with exactly these labels (0 when absent). */
  const metric = async (name: string, labels: string) => {
    const text = await (await fetch(`${base}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
    return line ? Number(line.split(" ").at(-1)) : 0;
  };
  const pagesRead = () => metric("ledger_export_pages_total", 'export="transactions"');

  /** Every item of a list route, page by page (500 at a time), as exact JSON text. */
  const listAll = async (
    path: string,
    query: Record<string, string>,
    field: string,
    key: string,
  ) => {
    const items: string[] = [];
    for (let offset = 0; ; offset += 500) {
      const res = await get(path, { ...query, limit: "500", offset: String(offset) }, key);
      expect(res.status, res.text).toBe(200);
      const body = parseJsonVerbatim(res.text) as Record<string, unknown>;
      const page = body[field] as unknown[];
      items.push(...page.map((item) => stringifyJson(item)));
      if (page.length < 500) return items;
    }
  };

  /** An export's NDJSON lines, each re-written as exact JSON text (keys in their order). */
  const ndjsonItems = (text: string) => {
    expect(text === "" || text.endsWith("\n")).toBe(true);
    return text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => stringifyJson(parseJsonVerbatim(line)));
  };

  const idOf = (json: string) => (JSON.parse(json) as { id: string }).id;

  beforeAll(async () => {
    t = await makeLedger({ fakeClock: new Date(START).toISOString() });
    base = await t.listen();
    big = await fundedAccount(t, "big-export", 1_000_000);
    await t.ledger.queue.run((trx) =>
      appendDebits(trx, {
        projectId: t.projectId,
        accountId: big,
        count: BIG_ROWS,
        amountMicros: 1,
        createdAtMs: (i) => START + 1000 + Math.floor(i / 3),
        description: (i) => `bulk ${i}`,
        metadata: () => stringifyJson({ pad: PAD }),
      }),
    );
    // Read straight from the table, in ledger order (the list route would take a while).
    const rows = await t.ledger.db.read
      .selectFrom("transactions")
      .select("id")
      .where("account_id", "=", big)
      .orderBy("created_at_ms")
      .orderBy("seq")
      .execute();
    bigIds = rows.map((r) => r.id);
    expect(bigIds).toHaveLength(BIG_ROWS + 1);
  }, 120_000);
  /** Connections of paused exports, closed before the server (a failed test leaves one). */
  const open: (() => void)[] = [];
  afterAll(async () => {
    for (const close of open) close();
    await t?.close();
  });

  it("writes RFC 4180 CSV: quotes, doubled quotes, CR and LF, and guards formulas", async () => {
    t.setNow(START + 10 * DAY_MS);
    const externalId = '=HYPERLINK("http://x","y")';
    const id = await fundedAccount(t, externalId);
    const texts = [
      "a,b",
      'say "hi"',
      "line1\nline2",
      "cr\rin",
      "crlf\r\nend",
      "=SUM(A1:A2)",
      "+1",
      "-2",
      "@cmd",
      "\ttab",
      "\rcr first",
      "plain - dash, = equal",
      "'already quoted",
    ];
    for (const description of texts) {
      await t.call(ledgerRoutes.add, {
        body: { accountId: id, amount: 1, description, metadata: { note: description } },
      });
    }
    const res = await get("/v1/transactions/export", { accountId: id });
    expect(res.status).toBe(200);
    expect(res.type).toBe("text/csv; charset=utf-8");
    expect(res.disposition).toMatch(
      /^attachment; filename="transactions-acc_\w+-\d{8}T\d{6}Z\.csv"$/,
    );
    expect(
      res.text.startsWith(
        "id,createdAt,accountId,externalId,type,amount,balanceAfter,description,reservationId,metadata,reversalOf,amountReversed,onBehalfOf,transferId\r\n",
      ),
    ).toBe(true);
    // Every line end is CRLF outside quotes: the parser refuses anything else.
    const rows = csvObjects(res.text);
    expect(rows.map((r) => r.description)).toEqual([
      "a,b",
      'say "hi"',
      "line1\nline2",
      "cr\rin",
      "crlf\r\nend",
      "'=SUM(A1:A2)",
      "'+1",
      "'-2",
      "'@cmd",
      "'\ttab",
      "'\rcr first",
      "plain - dash, = equal",
      "'already quoted",
    ]);
    expect(rows.every((r) => r.externalId === `'${externalId}`)).toBe(true);
    expect(res.text).toContain(`"'=HYPERLINK(""http://x"",""y"")"`);
    expect(res.text).toContain(`,"say ""hi""",`);
    // metadata is the JSON text of the list item; a JSON object never starts with a formula.
    expect(rows.map((r) => JSON.parse(r.metadata ?? "").note)).toEqual(texts);
    expect(rows.map((r) => r.balanceAfter)).toEqual(texts.map((_, k) => String(k + 1)));
    expect(rows.every((r) => r.reservationId === "" && r.type === "credit")).toBe(true);
  });

  it("writes exact numbers, the same literals as the list items", async () => {
    t.setNow(START + 11 * DAY_MS);
    const id = await fundedAccount(t, "exact-export");
    for (let i = 0; i < 8; i++) {
      await t.call(ledgerRoutes.add, { body: { accountId: id, amount: 1_000_000_000 } });
    }
    await t.api("POST", "/v1/accounts/credits/add", {
      body: `{"accountId": "${id}", "amount": 600000000.000001}`,
    });
    await t.call(ledgerRoutes.add, { body: { accountId: id, amount: 0.1 } });
    await t.call(ledgerRoutes.deduct, { body: { accountId: id, amount: 0.000001 } });
    await t.call(ledgerRoutes.add, { body: { accountId: id, amount: 0.2 } });
    const csv = csvObjects((await get("/v1/transactions/export", { accountId: id })).text);
    expect(csv.map((r) => [r.type, r.amount, r.balanceAfter]).slice(-4)).toEqual([
      ["credit", "600000000.000001", "8600000000.000001"],
      ["credit", "0.1", "8600000000.100001"],
      ["debit", "0.000001", "8600000000.1"],
      ["credit", "0.2", "8600000000.3"],
    ]);
    const nd = await get("/v1/transactions/export", { accountId: id, format: "ndjson" });
    expect(nd.type).toBe("application/x-ndjson");
    expect(nd.disposition).toMatch(/filename="transactions-acc_\w+-\d{8}T\d{6}Z\.ndjson"$/);
    expect(nd.text).toContain('"amount":600000000.000001,');
    expect(nd.text).toContain('"balanceAfter":8600000000.000001,');
    // Usage costs: the same literal as the list's item.
    const record = await t.call(usageRoutes.record, {
      body: { accountId: id, modelId: "gpt-4o", inputTokens: 3, outputTokens: 1, cachedTokens: 1 },
    });
    const usageCsv = csvObjects((await get("/v1/usage/export", { accountId: id })).text);
    const listed = await get("/v1/usage", { accountId: id });
    const literal = /"estimatedCostUsd":([0-9.e-]+)/.exec(listed.text)?.[1];
    expect(usageCsv).toHaveLength(1);
    expect(usageCsv[0]?.estimatedCostUsd).toBe(literal);
    expect(usageCsv[0]).toEqual({
      id: record.usageRecord.id,
      createdAt: record.usageRecord.createdAt,
      context: "customer",
      accountId: id,
      externalId: "exact-export",
      modelId: "gpt-4o",
      usageType: "text",
      inputTokens: "3",
      cachedTokens: "1",
      outputTokens: "1",
      estimatedCostUsd: literal,
      transactionId: "",
      creditsCharged: "",
      creditsReversed: "",
    });
  });

  it("selects what the list routes select, in exactly their reverse order", async () => {
    // A project of its own: three accounts, usage of two models and both contexts, four days.
    const { key } = await t.newProject("filters");
    const accounts = ["f-a", "f-b", "f-c"];
    for (const a of accounts) {
      await t.call(accountRoutes.create, { body: { externalId: a }, key });
      await t.call(ledgerRoutes.add, { body: { accountId: a, amount: 100 }, key });
    }
    for (let day = 0; day < 4; day++) {
      t.setNow(START + (20 + day) * DAY_MS + 3_600_000);
      for (const [k, a] of accounts.entries()) {
        await t.call(ledgerRoutes.deduct, { body: { accountId: a, amount: 0.5 + k }, key });
        for (const modelId of ["gpt-4o", "claude-sonnet-4-5"]) {
          await t.call(usageRoutes.record, {
            body: { accountId: a, modelId, inputTokens: 100 + day, outputTokens: 7 },
            key,
          });
        }
      }
      await t.call(usageRoutes.record, {
        body: { context: "system", modelId: "gpt-4o", inputTokens: 9, outputTokens: 9 },
        key,
      });
    }
    const day = (n: number) => new Date(START + (20 + n) * DAY_MS).toISOString().slice(0, 10);
    const transactionFilters: Record<string, string>[] = [
      {},
      { accountId: "f-b" },
      { externalId: "f-c", startDate: day(1) },
      { accountId: "f-a", endDate: day(0) },
      { startDate: day(1), endDate: day(2) },
      { startDate: `${day(2)}T00:30:00Z`, endDate: `${day(3)}T01:00:00+00:00` },
    ];
    for (const filter of transactionFilters) {
      const listed = await listAll("/v1/transactions", filter, "items", key);
      expect(listed.length, JSON.stringify(filter)).toBeGreaterThan(0);
      const nd = await get("/v1/transactions/export", { ...filter, format: "ndjson" }, key);
      expect(nd.status).toBe(200);
      expect(ndjsonItems(nd.text), JSON.stringify(filter)).toEqual([...listed].reverse());
      const csv = csvObjects((await get("/v1/transactions/export", filter, key)).text);
      expect(csv.map((r) => r.id)).toEqual(listed.map(idOf).reverse());
    }
    const usageFilters: Record<string, string>[] = [
      {},
      { accountId: "f-a" },
      { modelId: "gpt-4o" },
      { context: "system" },
      { context: "customer", modelId: "claude-sonnet-4-5", startDate: day(2) },
      { externalId: "f-b", endDate: day(1) },
    ];
    for (const filter of usageFilters) {
      const listed = await listAll("/v1/usage", filter, "usageRecords", key);
      expect(listed.length, JSON.stringify(filter)).toBeGreaterThan(0);
      const nd = await get("/v1/usage/export", { ...filter, format: "ndjson" }, key);
      expect(ndjsonItems(nd.text), JSON.stringify(filter)).toEqual([...listed].reverse());
      const csv = csvObjects((await get("/v1/usage/export", filter, key)).text);
      expect(csv.map((r) => r.id)).toEqual(listed.map(idOf).reverse());
      const externalIds = csv.map((r) => [r.context, r.externalId]);
      expect(externalIds.every(([c, e]) => (c === "system" ? e === "" : e?.startsWith("f-")))).toBe(
        true,
      );
    }
  });

  it("answers bad filters with the list route's 400 or 404, before any row", async () => {
    const cases: [Record<string, string>, number, "VALIDATION_ERROR" | "ACCOUNT_NOT_FOUND"][] = [
      [{ startDate: "2026-02-30" }, 400, "VALIDATION_ERROR"],
      [{ endDate: "yesterday" }, 400, "VALIDATION_ERROR"],
      [{ startDate: "2026-11-02", endDate: "2026-11-01" }, 400, "VALIDATION_ERROR"],
      [{ accountId: "nobody" }, 404, "ACCOUNT_NOT_FOUND"],
      [{ accountId: big, externalId: "exact-export" }, 400, "VALIDATION_ERROR"],
    ];
    for (const [path, list] of [
      ["/v1/transactions/export", "/v1/transactions"],
      ["/v1/usage/export", "/v1/usage"],
    ] as const) {
      for (const [query, status, code] of cases) {
        const res = await get(path, query);
        expect(res.type).toBe("application/json");
        const body = JSON.parse(res.text);
        expectError({ status: res.status, body }, status, code);
        // The very answer of the list route.
        const listed = await get(list, query);
        expect(JSON.parse(listed.text)).toEqual(body);
      }
      const format = await get(path, { format: "xlsx" });
      expectError(
        { status: format.status, body: JSON.parse(format.text) },
        400,
        "VALIDATION_ERROR",
      );
    }
    const usage = await get("/v1/usage/export", { context: "robot" });
    expectError({ status: usage.status, body: JSON.parse(usage.text) }, 400, "VALIDATION_ERROR");
  });

  /**
   * Starts an export of the big account over a plain HTTP connection and reads its first
   * chunk, then stops reading (the connection's buffers fill and the server waits).
   */
  const startPaused = (query: string) =>
    new Promise<{ res: IncomingMessage; chunks: Buffer[]; abort: () => void }>(
      (resolve, reject) => {
        const req = httpRequest(`${base}/v1/transactions/export?${query}`, {
          headers: { "X-API-Key": t.key },
        });
        req.on("error", () => {});
        req.on("response", (res) => {
          const chunks: Buffer[] = [];
          res.on("error", () => {});
          res.once("data", (chunk: Buffer) => {
            chunks.push(chunk);
            res.pause();
            res.on("data", (more: Buffer) => chunks.push(more));
            const abort = () => req.destroy();
            open.push(abort);
            resolve({ res, chunks, abort });
          });
        });
        req.once("error", reject);
        req.end();
      },
    );

  /** Waits until the pages the exports read stop growing (the server waits for the client). */
  const settledPages = async () => {
    let last = -1;
    for (;;) {
      await new Promise((r) => setTimeout(r, 300));
      const now = await pagesRead();
      if (now === last) return now;
      last = now;
    }
  };

  it("has no duplicate and no gap while writes go on, and ends at the rows of its start", async () => {
    const before = await pagesRead();
    const { res, chunks } = await startPaused(`accountId=${big}`);
    const readSoFar = (await settledPages()) - before;
    // The export is under way and waiting: most of its pages are still to be read.
    expect(readSoFar).toBeGreaterThan(0);
    expect(readSoFar).toBeLessThan(BIG_ROWS / 1000);
    // Writes while it waits: entries dated before, inside and after the rows still to be read.
    const written: string[] = [];
    for (const at of [START, START + 1000 + Math.floor(BIG_ROWS / 6), START + 30 * DAY_MS]) {
      t.setNow(at);
      const r = await Promise.all(
        Array.from({ length: 5 }, () =>
          t.call(ledgerRoutes.deduct, { body: { accountId: big, amount: 0.000001 } }),
        ),
      );
      written.push(...r.map((d) => d.transactionId));
    }
    const done = new Promise<void>((resolve) => res.on("end", () => resolve()));
    res.resume();
    await done;
    const rows = csvObjects(Buffer.concat(chunks).toString("utf8"));
    const ids = rows.map((r) => r.id ?? "");
    expect(new Set(ids).size).toBe(ids.length);
    // Exactly the entries committed before it began, in ledger order: the entries written
    // meanwhile are after its snapshot (docs/design.md#exports).
    expect(ids).toEqual(bigIds);
    expect(ids.filter((id) => written.includes(id))).toEqual([]);
    const keys = rows.map((r) => r.createdAt ?? "");
    expect([...keys].sort()).toEqual(keys);
    expect(rows.at(-1)?.description).toBe(`bulk ${BIG_ROWS - 1}`);
    // A new export has them all, once each.
    const after = await get("/v1/transactions/export", { accountId: big, format: "ndjson" });
    const again = ndjsonItems(after.text).map(idOf);
    expect(again).toHaveLength(bigIds.length + written.length);
    expect(new Set(again)).toEqual(new Set([...bigIds, ...written]));
    expect(await t.verify()).toEqual([]);
  }, 120_000);

  it("stops reading pages when the client disconnects", async () => {
    const cancelled = () =>
      metric("ledger_exports_total", 'export="transactions",outcome="cancelled"');
    const cancelledBefore = await cancelled();
    const before = await pagesRead();
    const { abort } = await startPaused(`accountId=${big}`);
    const waiting = (await settledPages()) - before;
    expect(waiting).toBeGreaterThan(0);
    expect(waiting).toBeLessThan(BIG_ROWS / 1000);
    abort();
    for (let i = 0; i < 50 && (await cancelled()) === cancelledBefore; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await cancelled()).toBe(cancelledBefore + 1);
    const atCancel = (await pagesRead()) - before;
    await new Promise((r) => setTimeout(r, 1000));
    // No page read after the disconnect (one being read as it came may still count).
    expect((await pagesRead()) - before).toBe(atCancel);
    expect(atCancel).toBeLessThanOrEqual(waiting + 1);
    expect(atCancel).toBeLessThan(BIG_ROWS / 1000);
    expect(await metric("ledger_exports_total", 'export="transactions",outcome="failed"')).toBe(0);
    // The service goes on answering.
    const ok = await get("/v1/transactions/export", { accountId: "exact-export" });
    expect(ok.status).toBe(200);
  }, 60_000);
});
