/**
 * The reversal fields of the Transaction object where it is listed (contract section 23,
 * docs/api.md#transaction-list, docs/api.md#exports): `amountReversed` (what a transaction's
 * reversals add up to, exact) and `reversalOf` (a reversal's original) on every item of
 * `GET /v1/transactions`, with `include` too; the `reversalOf` filter of the list and its
 * export; and the export's NDJSON items and CSV columns `reversalOf, amountReversed`, with sums
 * read per page and bounded like the export's rows.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { parseJsonVerbatim, stringifyJson } from "../src/json.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionExport } from "../src/transactions/export.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { expectError } from "./contract.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

const START = Date.parse("2026-11-01T08:00:00Z");

/** An item of the list, as far as these tests read it. */
interface Item {
  id: string;
  type: "credit" | "debit";
  amount: number;
  reversalOf: string | null;
  amountReversed: number;
  reservation?: { id: string } | null;
  usage?: { id: string; transactionId: string | null }[];
}

/** RFC 4180 records (CRLF line ends; quoted fields, their quotes doubled) as arrays of fields. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      record.push(field);
      field = "";
    } else if (c === "\r" && text[i + 1] === "\n") {
      record.push(field);
      records.push(record);
      record = [];
      field = "";
      i++;
    } else field += c;
  }
  return records;
}

/** CSV records as objects keyed by the header row. */
function csvObjects(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  if (header === undefined) throw new Error("no header row");
  return rows.map((row) => {
    expect(row).toHaveLength(header.length);
    return Object.fromEntries(header.map((name, k) => [name, row[k] ?? ""]));
  });
}

describe("reversal fields of listed transactions", () => {
  let t: TestLedger;
  let account: string;
  let other: string;
  /** The ids of the account's entries. */
  const ids = {
    add: "",
    add2: "",
    deduct: "",
    confirm: "",
    /** The deduction's reversals, oldest first. */
    r1: "",
    r2: "",
    /** The confirm's reversal. */
    r3: "",
    /** The second add's reversal (a debit). */
    r4: "",
  };
  let usageId: string;
  let reservationId: string;

  const tick = () => t.advance(1000);
  const reverse = async (transactionId: string, amount: number) => {
    tick();
    const res = await t.call(transactionRoutes.reverse, { body: { transactionId, amount } });
    return res.transaction.id;
  };
  /** The list's items (exact JSON text re-parsed) for `query`. */
  const list = async (query: Record<string, string>, key = t.key) => {
    const qs = new URLSearchParams(query).toString();
    const res = await t.api("GET", `/v1/transactions?${qs}`, { key });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { items: Item[]; pagination: { totalCount: number } };
  };
  /** A raw answer of the export for `query`. */
  const exported = async (query: Record<string, string>) => {
    const qs = new URLSearchParams(query).toString();
    const res = await t.app.request(`/v1/transactions/export?${qs}`, {
      headers: { "X-API-Key": t.key },
    });
    expect(res.status).toBe(200);
    return res.text();
  };
  /** The list's items for `query`, each as exact JSON text (keys in their order). */
  const listedJson = async (query: Record<string, string>) => {
    const qs = new URLSearchParams({ ...query, limit: "500" }).toString();
    const res = await t.app.request(`/v1/transactions?${qs}`, {
      headers: { "X-API-Key": t.key },
    });
    const body = parseJsonVerbatim(await res.text()) as { items: unknown[] };
    return body.items.map((item) => stringifyJson(item));
  };
  const ndjsonJson = (text: string) =>
    text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => stringifyJson(parseJsonVerbatim(line)));

  beforeAll(async () => {
    t = await makeLedger({ fakeClock: new Date(START).toISOString() });
    const created = await t.call(accountRoutes.create, { body: { externalId: "rev-fields" } });
    account = created.account.id;
    other = (await t.call(accountRoutes.create, { body: { externalId: "rev-other" } })).account.id;
    await t.call(ledgerRoutes.add, { body: { accountId: other, amount: 5 } });
    tick();
    ids.add = (
      await t.call(ledgerRoutes.add, { body: { accountId: account, amount: 100 } })
    ).transactionId;
    tick();
    ids.add2 = (
      await t.call(ledgerRoutes.add, { body: { accountId: account, amount: 50 } })
    ).transactionId;
    tick();
    ids.deduct = (
      await t.call(ledgerRoutes.deduct, { body: { accountId: account, amount: 10 } })
    ).transactionId;
    tick();
    const hold = await t.call(reservationRoutes.create, {
      body: { accountId: account, amount: 5, operation: "chat" },
    });
    reservationId = hold.reservation.id;
    tick();
    ids.confirm = (
      await t.call(reservationRoutes.confirm, {
        body: { reservationId, actualAmount: 4 },
      })
    ).transactionId;
    tick();
    const record = await t.call(usageRoutes.record, {
      body: {
        accountId: account,
        transactionId: ids.confirm,
        modelId: "gpt-4o",
        inputTokens: 10,
        outputTokens: 5,
      },
    });
    usageId = record.usageRecord.id;
    // The deduction reversed in two parts, the confirm and the second add in one each.
    ids.r1 = await reverse(ids.deduct, 2.5);
    ids.r2 = await reverse(ids.deduct, 1.000001);
    ids.r3 = await reverse(ids.confirm, 1.5);
    ids.r4 = await reverse(ids.add2, 0.25);
  });
  afterAll(async () => {
    await t?.close();
  });

  it("lists amountReversed on each original and reversalOf on each reversal", async () => {
    const { items, pagination } = await list({ accountId: account });
    expect(pagination.totalCount).toBe(8);
    const fields = items.map((i) => [i.id, i.type, i.amount, i.reversalOf, i.amountReversed]);
    expect(fields).toEqual([
      [ids.r4, "debit", 0.25, ids.add2, 0],
      [ids.r3, "credit", 1.5, ids.confirm, 0],
      [ids.r2, "credit", 1.000001, ids.deduct, 0],
      [ids.r1, "credit", 2.5, ids.deduct, 0],
      [ids.confirm, "debit", 4, null, 1.5],
      [ids.deduct, "debit", 10, null, 3.500001],
      [ids.add2, "credit", 50, null, 0.25],
      [ids.add, "credit", 100, null, 0],
    ]);
    // The exact literal, never a rounded double.
    expect((await listedJson({ accountId: account })).join("\n")).toContain(
      '"amountReversed":3.500001',
    );
    // The project-wide list too: the other account's entry is neither.
    const all = await list({});
    expect(all.pagination.totalCount).toBe(9);
    const mine = all.items.find((i) => i.id === ids.deduct);
    expect(mine).toMatchObject({ reversalOf: null, amountReversed: 3.500001 });
    const theirs = all.items.find((i) => i.reversalOf === null && i.amount === 5);
    expect(theirs).toMatchObject({ reversalOf: null, amountReversed: 0 });
  });

  it("filters by reversalOf: a transaction's reversals, with the other filters", async () => {
    const both = await list({ reversalOf: ids.deduct });
    expect(both.items.map((i) => i.id)).toEqual([ids.r2, ids.r1]);
    expect(both.pagination.totalCount).toBe(2);
    expect((await list({ reversalOf: ids.deduct, limit: "1", offset: "1" })).items).toHaveLength(1);
    expect((await list({ reversalOf: ids.add2 })).items.map((i) => i.id)).toEqual([ids.r4]);
    expect((await list({ reversalOf: ids.deduct, type: "credit" })).pagination.totalCount).toBe(2);
    expect((await list({ reversalOf: ids.deduct, type: "debit" })).items).toEqual([]);
    const named = await list({ reversalOf: ids.deduct, externalId: "rev-fields" });
    expect(named.items.map((i) => i.id)).toEqual([ids.r2, ids.r1]);
    expect((await list({ reversalOf: ids.deduct, accountId: other })).items).toEqual([]);
    // r1 .. r4 were booked a second apart, r4 now: from between r1 and r2 on, only r2.
    const since = new Date(t.now() - 2500).toISOString();
    const recent = await list({ reversalOf: ids.deduct, startDate: since });
    expect(recent.items.map((i) => i.id)).toEqual([ids.r2]);
    // A transaction without reversals, a reversal, an unknown id: nothing, not a 404.
    expect((await list({ reversalOf: ids.add })).items).toEqual([]);
    expect((await list({ reversalOf: ids.r1 })).items).toEqual([]);
    expect((await list({ reversalOf: "txn_nothing" })).pagination.totalCount).toBe(0);
    // Another project sees none of this project's reversals.
    const { key } = await t.newProject("rev-fields-other");
    expect((await list({ reversalOf: ids.deduct }, key)).items).toEqual([]);
    // Validated like the other id filters, by the list and by its export.
    for (const path of ["/v1/transactions", "/v1/transactions/export"]) {
      for (const bad of ["", "x".repeat(256)]) {
        const res = await t.api("GET", `${path}?reversalOf=${bad}`);
        expectError(res, 400, "VALIDATION_ERROR");
      }
    }
  });

  it("keeps both fields with include=usage,reservation", async () => {
    const { items } = await list({ accountId: account, include: "usage,reservation" });
    const confirm = items.find((i) => i.id === ids.confirm);
    expect(confirm).toMatchObject({ reversalOf: null, amountReversed: 1.5 });
    expect(confirm?.reservation?.id).toBe(reservationId);
    expect(confirm?.usage?.map((u) => u.id)).toEqual([usageId]);
    const reversal = items.find((i) => i.id === ids.r3);
    expect(reversal).toMatchObject({ reversalOf: ids.confirm, amountReversed: 0 });
    expect(reversal?.reservation).toBeNull();
    expect(reversal?.usage).toEqual([]);
    const deduct = items.find((i) => i.id === ids.deduct);
    expect(deduct).toMatchObject({ reservation: null, usage: [], amountReversed: 3.500001 });
    // The same entries as without include, but for the audit data.
    const plain = await list({ accountId: account });
    expect(items.map(({ reservation: _r, usage: _u, ...rest }) => rest)).toEqual(plain.items);
  });

  it("exports both fields: NDJSON items as the list's, CSV columns at the end", async () => {
    const queries: Record<string, string>[] = [
      { accountId: account },
      { reversalOf: ids.deduct },
      {},
    ];
    for (const query of queries) {
      const listed = await listedJson(query);
      const nd = await exported({ ...query, format: "ndjson" });
      expect(ndjsonJson(nd), JSON.stringify(query)).toEqual([...listed].reverse());
    }
    const csv = await exported({ accountId: account });
    expect(csv.split("\r\n")[0]).toBe(
      "id,createdAt,accountId,externalId,type,amount,balanceAfter,description,reservationId," +
        "metadata,reversalOf,amountReversed,onBehalfOf,transferId",
    );
    const rows = csvObjects(csv);
    expect(rows.map((r) => [r.id, r.reversalOf, r.amountReversed])).toEqual([
      [ids.add, "", "0"],
      [ids.add2, "", "0.25"],
      [ids.deduct, "", "3.500001"],
      [ids.confirm, "", "1.5"],
      [ids.r1, ids.deduct, "0"],
      [ids.r2, ids.deduct, "0"],
      [ids.r3, ids.confirm, "0"],
      [ids.r4, ids.add2, "0"],
    ]);
    const filtered = csvObjects(await exported({ reversalOf: ids.deduct, format: "csv" }));
    expect(filtered.map((r) => [r.id, r.amount, r.reversalOf])).toEqual([
      [ids.r1, "2.5", ids.deduct],
      [ids.r2, "1.000001", ids.deduct],
    ]);
  });

  it("sums per page, bounded like the rows: no reversal booked after the export began", async () => {
    const source = await transactionExport(
      t.ledger.db.read,
      t.projectId,
      { accountId: account },
      { format: "ndjson", filename: "x.ndjson", pageRows: 2 },
    );
    // Booked after the export began: neither its row nor its amount is in the file.
    const late = await reverse(ids.deduct, 1);
    let text = "";
    let pages = 0;
    for await (const page of source.pages) {
      pages++;
      text += await source.encode(page);
    }
    expect(pages).toBe(4);
    const items = ndjsonJson(text).map((line) => JSON.parse(line) as Item);
    expect(items.map((i) => i.id)).not.toContain(late);
    expect(items.find((i) => i.id === ids.deduct)?.amountReversed).toBe(3.500001);
    // A later export has both.
    const again = ndjsonJson(await exported({ accountId: account, format: "ndjson" })).map(
      (line) => JSON.parse(line) as Item,
    );
    expect(again.find((i) => i.id === ids.deduct)?.amountReversed).toBe(4.500001);
    expect(again.at(-1)).toMatchObject({ id: late, reversalOf: ids.deduct });
  });
});
