/**
 * The admission rule (src/admission/rule.ts, docs/design.md#the-admission-rule) gives the same
 * answer on numbers (the general path) and in each engine's SQL (the plain statements and
 * PostgreSQL's generated functions), on every combination of boundary values: each figure equal
 * to the one it is compared with, and one micro-credit either side, thresholds and first grants
 * null. Its answers are also checked against the rule as the API documents it, in plain words.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Kysely, type SqlBool, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admissionFunctions } from "../src/admission/postgres.ts";
import {
  inSql,
  type LimitTerms,
  numbers,
  passesLimit,
  plainDebit,
  plainLimit,
  reachesLimit,
} from "../src/admission/rule.ts";
import { type Database, openDatabase } from "../src/db/client.ts";
import type { DB } from "../src/db/schema.ts";
import { type FreshDatabase, freshDatabase, TEST_ENGINE } from "./pg-harness.ts";

/** Debits: available, needed, drawn, first grant, threshold around 100 µ. */
function debitCases() {
  const cases: {
    available: number;
    needed: number;
    drawn: number;
    first: number | null;
    threshold: number | null;
  }[] = [];
  for (const available of [99, 100, 101])
    for (const needed of [0, 1, 100])
      for (const drawn of [0, needed])
        for (const first of [null, 0, needed - 1, needed, needed + 1])
          for (const threshold of [
            null,
            0,
            available - needed - 1,
            available - needed,
            available - needed + 1,
            available,
            available + 1,
          ])
            cases.push({ available, needed, drawn, first, threshold });
  return cases;
}

/** Limits: spent + held around the amount of 100 µ, needed 0, 1 or more. */
function limitCases() {
  const cases: (LimitTerms<number> & { soft: boolean })[] = [];
  for (const spent of [0, 49, 50, 98, 99, 100, 101])
    for (const held of [0, 1])
      for (const needed of [0, 1, 2, 50])
        for (const soft of [false, true]) cases.push({ spent, held, needed, amount: 100, soft });
  return cases;
}

/** The documented rule, in plain words (docs/api.md), for the debit cases. */
function documentedDebit(c: ReturnType<typeof debitCases>[number]): boolean {
  const after = c.available - c.needed;
  const covered = c.available >= c.needed;
  const lowEvent = c.threshold !== null && c.available >= c.threshold && after < c.threshold;
  const oneGrant = c.drawn === 0 || (c.first !== null && c.first >= c.drawn);
  return covered && !lowEvent && oneGrant;
}

describe("the admission rule", () => {
  let db: Database;
  let dir: string;
  let database: FreshDatabase;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-admission-"));
    database = await freshDatabase(dir);
    db = await openDatabase({
      url: database.url,
      authToken: database.env.DATABASE_AUTH_TOKEN,
      driver: "auto",
      synchronous: "NORMAL",
    });
    if (TEST_ENGINE === "postgres") {
      for (const text of Object.values(admissionFunctions())) await sql.raw(text).execute(db.write);
    }
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const lit = (n: number | null) => (n === null ? sql<number | null>`NULL` : inSql.lit(n));
  /** The SQL algebra's answer, evaluated by this engine: 1 or 0. */
  async function evaluate(read: Kysely<DB>, condition: ReturnType<typeof inSql.and>) {
    const row = await sql<{
      v: number | boolean;
    }>`SELECT CASE WHEN ${condition} THEN 1 ELSE 0 END AS v`.execute(read);
    return Number(row.rows[0]?.v) === 1;
  }

  it("a debit's plain region: numbers, SQL and the documented rule agree on every boundary", async () => {
    const cases = debitCases();
    for (const c of cases) {
      const onNumbers = plainDebit(numbers, {
        region: true,
        available: c.available,
        needed: c.needed,
        drawn: c.drawn,
        firstRemaining: c.first,
        threshold: c.threshold,
      });
      expect(onNumbers, JSON.stringify(c)).toBe(documentedDebit(c));
    }
    // One statement evaluates every case in this engine's SQL.
    const conditions = cases.map((c) =>
      plainDebit(inSql, {
        region: sql<SqlBool>`(1 = 1)`,
        available: lit(c.available),
        needed: lit(c.needed),
        drawn: lit(c.drawn),
        firstRemaining: lit(c.first),
        threshold: lit(c.threshold),
      }),
    );
    const inEngine = await Promise.all(conditions.map((condition) => evaluate(db.read, condition)));
    expect(inEngine).toEqual(cases.map(documentedDebit));
    expect(inEngine.filter(Boolean).length).toBeGreaterThan(100);
    expect(inEngine.filter((v) => !v).length).toBeGreaterThan(100);
  });

  it("a spend limit: refusal, reach and plain region agree on numbers and in SQL", async () => {
    for (const c of limitCases()) {
      const before = c.spent + c.held;
      const after = before + c.needed;
      expect(passesLimit(numbers, c), JSON.stringify(c)).toBe(c.needed > 0 && after > c.amount);
      expect(reachesLimit(numbers, c), JSON.stringify(c)).toBe(
        c.needed > 0 && before < c.amount && after >= c.amount,
      );
      const plain = plainLimit(numbers, c, c.soft);
      expect(plain).toBe(!reachesLimit(numbers, c) && (c.soft || !passesLimit(numbers, c)));
      const terms = {
        spent: lit(c.spent),
        held: lit(c.held),
        needed: lit(c.needed),
        amount: lit(c.amount),
      };
      expect(await evaluate(db.read, plainLimit(inSql, terms, c.soft)), JSON.stringify(c)).toBe(
        plain,
      );
      const softTerm = c.soft ? sql<SqlBool>`(1 = 1)` : sql<SqlBool>`(1 = 0)`;
      expect(await evaluate(db.read, plainLimit(inSql, terms, softTerm)), JSON.stringify(c)).toBe(
        plain,
      );
    }
  });

  it.runIf(TEST_ENGINE === "postgres")(
    "PostgreSQL's generated functions answer the rule on numbers",
    async () => {
      for (const c of debitCases()) {
        const row = await sql<{
          v: boolean;
        }>`SELECT ledger_plain_fits(true, ${c.available}::bigint, ${c.threshold}::bigint, ${c.first}::bigint, ${c.drawn}::bigint, ${c.needed}::bigint) AS v`.execute(
          db.read,
        );
        expect(row.rows[0]?.v, JSON.stringify(c)).toBe(documentedDebit(c));
      }
      for (const c of limitCases()) {
        const row = await sql<{
          v: boolean;
        }>`SELECT ledger_plain_limit(${c.spent}::bigint, ${c.held}::bigint, ${c.needed}::bigint, ${c.amount}::bigint, ${c.soft}) AS v`.execute(
          db.read,
        );
        expect(row.rows[0]?.v, JSON.stringify(c)).toBe(plainLimit(numbers, c, c.soft));
      }
      const region = await sql<{
        v: boolean;
      }>`SELECT ledger_plain_fits(false, 100, NULL, 100, 1, 1) AS v`.execute(db.read);
      expect(region.rows[0]?.v).toBe(false);
    },
  );
});
