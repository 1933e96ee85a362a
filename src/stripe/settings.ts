/**
 * A project's Stripe connection (docs/api.md#selling-credits-through-stripe,
 * docs/operations.md#stripe): its webhook signing secret and optional secret key, set by the
 * operator only (`ledger stripe set` / `unset`), never shown in an answer, a log or an export.
 * Each webhook request reads them afresh, so a running service sees a change at once.
 */
import type { Kysely, Transaction } from "kysely";
import type { DB } from "../db/schema.ts";
import type { WriteQueue } from "../db/write-path.ts";
import { projectIdByName } from "../projects/service.ts";

/** What the operator gives `ledger stripe set`. */
export interface StripeSecrets {
  /** The endpoint's signing secret, `whsec_…`. */
  webhookSecret: string;
  /** A secret or restricted key, `sk_…` / `rk_…`; undefined: none (set keeps none). */
  secretKey?: string | undefined;
}

/** A project's connection as the webhook route reads it. */
export interface StripeConnection {
  projectId: string;
  webhookSecret: string;
  secretKey: string | null;
  /** Micro-credits per USD (docs/api.md#charging-usage-in-credits); null: no credit price. */
  creditsPerUsdMicros: number | null;
}

/**
 * Checks the secrets' forms: `whsec_` and at least 8 more characters; a key `sk_` or `rk_` and
 * at least 8 more; neither with whitespace.
 * @throws Error naming the one that is wrong (never echoing it)
 */
export function checkSecrets(secrets: StripeSecrets): void {
  if (!/^whsec_\S{8,}$/.test(secrets.webhookSecret)) {
    throw new Error("the webhook secret must start with whsec_ (Stripe's endpoint signing secret)");
  }
  if (secrets.secretKey !== undefined && !/^(sk|rk)_\S{8,}$/.test(secrets.secretKey)) {
    throw new Error("the secret key must start with sk_ or rk_");
  }
}

/**
 * Connects the project named `projectName` to Stripe (replacing an earlier connection; the key
 * is removed when none is given).
 * @returns the project's id
 * @throws Error when a secret has the wrong form or no project has that name
 */
export async function connectStripe(
  queue: WriteQueue,
  projectName: string,
  secrets: StripeSecrets,
): Promise<{ projectId: string }> {
  checkSecrets(secrets);
  return setSecrets(queue, projectName, {
    stripe_webhook_secret: secrets.webhookSecret,
    stripe_secret_key: secrets.secretKey ?? null,
  });
}

/**
 * Disconnects the project named `projectName`: its webhooks are then answered 404 and its
 * secrets are gone. Its purchases and events stay.
 * @throws Error when no project has that name
 */
export function disconnectStripe(
  queue: WriteQueue,
  projectName: string,
): Promise<{ projectId: string }> {
  return setSecrets(queue, projectName, { stripe_webhook_secret: null, stripe_secret_key: null });
}

async function setSecrets(
  queue: WriteQueue,
  projectName: string,
  values: { stripe_webhook_secret: string | null; stripe_secret_key: string | null },
) {
  const projectId = await queue.run(async (trx) => {
    const id = await projectIdByName(trx, projectName);
    if (id !== null) await trx.updateTable("projects").set(values).where("id", "=", id).execute();
    return id;
  });
  if (projectId === null) throw new Error(`no project named ${projectName}`);
  return { projectId };
}

/** The connection of project `projectId`, or null when it does not exist or is not connected. */
export async function readConnection(
  db: Kysely<DB> | Transaction<DB>,
  projectId: string,
): Promise<StripeConnection | null> {
  const row = await db
    .selectFrom("projects")
    .select(["id", "stripe_webhook_secret", "stripe_secret_key", "credits_per_usd_micros"])
    .where("id", "=", projectId)
    .executeTakeFirst();
  if (row === undefined || row.stripe_webhook_secret === null) return null;
  return {
    projectId: row.id,
    webhookSecret: row.stripe_webhook_secret,
    secretKey: row.stripe_secret_key,
    creditsPerUsdMicros: row.credits_per_usd_micros,
  };
}
