/**
 * PostgreSQL's functions of the admission rule (docs/design.md#the-admission-rule), generated
 * from rule.ts: their bodies are the rule built on SQL expressions whose terms are the
 * functions' parameters. The migrator applies them with the function files of
 * `sql/postgres/functions/` (docs/design.md#database-functions), whenever their text changes,
 * that is whenever the rule does; the plain functions of those files call them:
 *
 * - `ledger_plain_fits(p_plain, p_available, p_threshold, p_first_remaining, p_amount,
 *   p_needed)`: `plainDebit` (a debit drawing `p_amount` and lowering `available` by `p_needed`;
 *   a reservation draws 0);
 * - `ledger_plain_limit(p_spent, p_held, p_needed, p_amount, p_soft)`: `plainLimit` of one
 *   spend limit;
 * - `ledger_grant_work(p_account, p_now)`: grant-work.ts's `grantWork` of one account.
 *
 * The first two are `LANGUAGE sql IMMUTABLE` expressions of their parameters, which PostgreSQL
 * inlines into the statements of the plpgsql functions that call them; the third reads grants,
 * so it is plpgsql, whose plan is kept for the session. Amounts in micro-credits, times in
 * epoch ms.
 */
import { type Expression, expressionBuilder, type SqlBool, sql } from "kysely";
import { sqlText } from "../db/prepared.ts";
import type { DB } from "../db/schema.ts";
import { grantWork } from "./grant-work.ts";
import { inSql, plainDebit, plainLimit } from "./rule.ts";

/** A parameter of a generated function, as a term of the rule. */
const param = (name: string) => sql.raw<number | null>(name);

/**
 * `CREATE OR REPLACE FUNCTION` of an IMMUTABLE boolean SQL function whose body is `condition`,
 * which reads only the function's parameters (so PostgreSQL inlines it into its caller).
 */
function booleanFunction(name: string, parameters: string, condition: Expression<SqlBool>) {
  const body = sqlText("postgres", (db) => sql`SELECT coalesce(${condition}, false)`.compile(db));
  return [
    "-- Generated from src/admission/ by src/admission/postgres.ts: edit the rule, not this.",
    `CREATE OR REPLACE FUNCTION ${name}(${parameters})`,
    "RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$",
    `  ${body};`,
    "$$;",
    "",
  ].join("\n");
}

/** The plain region of a debit or reservation, for `ledger_plain_move` and its callers. */
function plainFits(): string {
  const condition = plainDebit(inSql, {
    region: sql.raw<SqlBool>("p_plain"),
    available: param("p_available"),
    needed: param("p_needed"),
    drawn: param("p_amount"),
    firstRemaining: param("p_first_remaining"),
    threshold: param("p_threshold"),
  });
  return booleanFunction(
    "ledger_plain_fits",
    "p_plain BOOLEAN, p_available BIGINT, p_threshold BIGINT, p_first_remaining BIGINT, p_amount BIGINT, p_needed BIGINT",
    condition,
  );
}

/** The plain region of one spend limit, for `ledger_plain_limited_debit`. */
function plainLimitFunction(): string {
  const terms = {
    spent: param("p_spent"),
    held: param("p_held"),
    needed: param("p_needed"),
    amount: param("p_amount"),
  };
  return booleanFunction(
    "ledger_plain_limit",
    "p_spent BIGINT, p_held BIGINT, p_needed BIGINT, p_amount BIGINT, p_soft BOOLEAN",
    plainLimit(inSql, terms, sql.raw<SqlBool>("p_soft")),
  );
}

/**
 * The plain region's grant condition (grant-work.ts), for `ledger_plain_account`. plpgsql, not
 * SQL: a SQL function whose body reads tables is not inlined into its caller, and PostgreSQL
 * plans such a function's query again at every call, where plpgsql keeps the plan of its
 * `RETURN` for the session.
 */
function grantWorkFunction(): string {
  const eb = expressionBuilder<DB, "accounts">();
  const condition = grantWork(eb, sql.raw<number>("p_now"), sql.raw<string>("p_account"));
  const body = sqlText("postgres", (db) => sql`${condition}`.compile(db));
  return [
    "-- Generated from src/admission/ by src/admission/postgres.ts: edit the rule, not this.",
    "CREATE OR REPLACE FUNCTION ledger_grant_work(p_account TEXT, p_now BIGINT)",
    "RETURNS BOOLEAN LANGUAGE plpgsql STABLE AS $$",
    "BEGIN",
    `  RETURN coalesce(${body}, false);`,
    "END;",
    "$$;",
    "",
  ].join("\n");
}

/**
 * The generated functions as the migrator takes function files: `functions/<name>.sql` → the
 * text to apply (src/db/migrator.ts `migrateToLatest`).
 */
export function admissionFunctions(): Record<string, string> {
  return {
    // It replaces ledger_no_crossing, whose rule it now holds.
    "functions/ledger_plain_fits.sql": `DROP FUNCTION IF EXISTS ledger_no_crossing(BIGINT, BIGINT, BIGINT);\n${plainFits()}`,
    "functions/ledger_plain_limit.sql": plainLimitFunction(),
    "functions/ledger_grant_work.sql": grantWorkFunction(),
  };
}
