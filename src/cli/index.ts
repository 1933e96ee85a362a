#!/usr/bin/env node
/**
 * The `ledger` command: serve, migrate, keys create/list/revoke, project set-price, stripe
 * set/unset, models
 * seed/import, backup, restore, verify, and `--version`. Every command that touches the
 * database names it on standard error and applies pending migrations first (restore migrates
 * the restored copy); only serve, migrate, keys create and restore create a missing database
 * file (src/cli/database.ts). See docs/operations.md#command-line.
 *
 * This file only names the commands and parses their arguments: what they do is in
 * ./commands.ts, imported when a command runs, so that `ledger --help` and `ledger --version`
 * load no database driver and answer in a fraction of a second.
 */
import { Command } from "commander";
import { ledgerVersion } from "../version.ts";

/** The command implementations, loaded on first use (a second or more of imports). */
const commands = () => import("./commands.ts");

const program = new Command()
  .name("ledger")
  .description("Credit ledger service: exact balances, reservations, plans, usage costing")
  .version(ledgerVersion(), "-V, --version", "print the version");

program
  .command("serve")
  .description("start the HTTP service (PORT, DATABASE_URL, ... from the environment)")
  .action(async () => (await commands()).serve());

program
  .command("migrate")
  .description("apply pending database migrations")
  .action(async () => (await commands()).migrate());

const keys = program.command("keys").description("manage API keys");
keys
  .command("create")
  .description("create an API key for a project (the project is created if new)")
  .requiredOption("--project <name>", "project name")
  .option("--json", 'print {"projectId","keyId","apiKey"}')
  .action(async (opts: { project: string; json?: boolean }) => (await commands()).keysCreate(opts));
keys
  .command("list")
  .description("list API keys by id (never the secrets), oldest first")
  .option("--project <name>", "only this project's keys")
  .option("--json", 'print {"keys": [{"keyId","projectId","projectName","createdAt","revokedAt"}]}')
  .action(async (opts: { project?: string; json?: boolean }) => (await commands()).keysList(opts));
keys
  .command("revoke")
  .description("revoke an API key, given the key itself or its id (key_...)")
  .argument("<key>", "the API key or its id")
  .action(async (key: string) => (await commands()).keysRevoke(key));

const project = program.command("project").description("manage a project's settings");
project
  .command("set-price")
  .description("set a project's credit price: credits per USD of model cost (null unsets it)")
  .requiredOption("--project <name>", "project name")
  .argument("<creditsPerUsd>", "credits per USD: > 0, at most 6 decimals, at most 1e9; or null")
  .action(async (price: string, opts: { project: string }) =>
    (await commands()).projectSetPrice(price, opts),
  );

const stripe = program
  .command("stripe")
  .description("connect a project to Stripe (its webhook secret and API key; never shown)");
stripe
  .command("set")
  .description("connect a project: Stripe posts to /stripe/webhooks/<projectId>")
  .requiredOption("--project <name>", "project name")
  .requiredOption("--webhook-secret <whsec>", "the endpoint's signing secret (whsec_...)")
  .option("--secret-key <sk>", "a secret or restricted key (sk_... / rk_...) for API reads")
  .action(async (opts: { project: string; webhookSecret: string; secretKey?: string }) =>
    (await commands()).stripeSet(opts),
  );
stripe
  .command("unset")
  .description("disconnect a project from Stripe (its purchases stay)")
  .requiredOption("--project <name>", "project name")
  .action(async (opts: { project: string }) => (await commands()).stripeUnset(opts));

const models = program.command("models").description("manage the model price catalog");
models
  .command("seed")
  .description("load the shipped catalog (data/models.json)")
  .action(async () => (await commands()).modelsSeed());
models
  .command("import")
  .description("load a pricing file: the service's format or LiteLLM's price map")
  .argument("<file>", "path to the JSON file")
  .option("--provider <name>", "only this provider (openai, anthropic, google, ...)")
  .action(async (file: string, opts: { provider?: string }) =>
    (await commands()).modelsImport(file, opts),
  );

program
  .command("backup")
  .description("write a checked, consistent copy of the database file, also while it serves")
  .argument("<file>", "the backup file to create (must not exist)")
  .action(async (file: string) => (await commands()).backup(file));

program
  .command("restore")
  .description("replace the database file by a checked backup, or create it (service stopped)")
  .argument("<file>", "the backup file")
  .action(async (file: string) => (await commands()).restore(file));

program
  .command("verify")
  .description("check every ledger invariant; exits 1 naming each mismatch")
  .action(async () => (await commands()).verify());

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`ledger: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
