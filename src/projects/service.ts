/**
 * The project of an API key and its credit price (docs/api.md#charging-usage-in-credits): how
 * many credits one USD of model cost is, stored exactly as micro-credits per USD.
 */
import type { ExpressionBuilder, Kysely, Transaction } from "kysely";
import { prepared } from "../db/prepared.ts";
import type { DB, ProjectsTable } from "../db/schema.ts";
import { ApiError } from "../errors.ts";

/**
 * A project as the API shows it: with whether it is connected to Stripe and has a secret key
 * (docs/api.md#selling-credits-through-stripe; 1/0 or true/false, by engine), never the secrets.
 */
export type ProjectRow = Pick<
  ProjectsTable,
  "id" | "name" | "created_at_ms" | "credits_per_usd_micros"
> & { stripe_connected: number | boolean; stripe_key_set: number | boolean };

/** The columns of a ProjectRow. */
const projectColumns = (eb: ExpressionBuilder<DB, "projects">) => [
  "id" as const,
  "name" as const,
  "created_at_ms" as const,
  "credits_per_usd_micros" as const,
  eb("stripe_webhook_secret", "is not", null).as("stripe_connected"),
  eb("stripe_secret_key", "is not", null).as("stripe_key_set"),
];

const projectById = prepared<{ projectId: string }, ProjectRow>((db, arg) =>
  db.selectFrom("projects").select(projectColumns).where("id", "=", arg("projectId")),
);

/**
 * The project `projectId` (the API key's, so it exists).
 * @throws Error when it does not (a key of a missing project is a bug)
 */
export async function readProject(
  db: Kysely<DB> | Transaction<DB>,
  projectId: string,
): Promise<ProjectRow> {
  const row = (await db.executeQuery(projectById(db, { projectId }))).rows[0];
  if (!row) throw new Error(`project ${projectId} of an API key does not exist`);
  return row;
}

/**
 * The 400 of a charge in credits for a project without a credit price: it names the route that
 * sets one (docs/api.md#charging-usage-in-credits).
 */
export function noCreditPrice(): ApiError {
  return new ApiError(
    "VALIDATION_ERROR",
    "The project has no credit price: set creditsPerUsd with POST /v1/project/update (or `ledger project set-price`) before charging usage in credits",
    [{ path: "project.creditsPerUsd", message: "not set" }],
  );
}

/**
 * Sets (or with null unsets) a project's credit price, in micro-credits per USD (validated:
 * > 0, at most 1e9 credits). Later charges use it; records keep what they were charged.
 * @returns the project afterwards, or null when no project has that id
 */
export async function setCreditPrice(
  trx: Transaction<DB>,
  projectId: string,
  creditsPerUsdMicros: number | null,
): Promise<ProjectRow | null> {
  const row = await trx
    .updateTable("projects")
    .set({ credits_per_usd_micros: creditsPerUsdMicros })
    .where("id", "=", projectId)
    .returning(projectColumns)
    .executeTakeFirst();
  return row ?? null;
}

/** The id of the project named `name`, or null. */
export async function projectIdByName(
  db: Kysely<DB> | Transaction<DB>,
  name: string,
): Promise<string | null> {
  const row = await db
    .selectFrom("projects")
    .select("id")
    .where("name", "=", name)
    .executeTakeFirst();
  return row?.id ?? null;
}
