#!/usr/bin/env node
/**
 * The `ledger` command: serve, migrate, keys create/list/revoke, project set-price, models
 * seed/import, backup, restore, verify, and `--version`. Every command that touches the
 * database names it on standard error and applies pending migrations first (restore migrates
 * the restored copy);
 * only serve, migrate and keys create create a missing database file (src/cli/database.ts).
 * See docs/operations.md#command-line.
 */
import { Command } from "commander";
import { embeddedDatabasePath, writeBackup } from "../backup/backup.ts";
import { restoreBackup } from "../backup/restore.ts";
import { loadConfig } from "../config.ts";
import { createProjectKey, listKeys, revokeKey } from "../db/api-keys.ts";
import { verifyLedger } from "../ledger/verify.ts";
import { seedModels } from "../models/seed.ts";
import { readPricingFile, upsertModels } from "../models/service.ts";
import { fromMicros } from "../money.ts";
import { openLedger } from "../runtime.ts";
import { startServer } from "../server.ts";
import { ledgerVersion } from "../version.ts";
import { announceDatabase } from "./database.ts";
import { formatKeyTable } from "./keys.ts";
import { setProjectPrice } from "./project.ts";

/**
 * Runs `fn` over an opened ledger and closes it, after naming the database on stderr.
 * @param options.create whether the command may create a missing database file (default no)
 * @throws CliError when the database file is missing and the command may not create it
 */
async function withLedger<T>(
  fn: (ledger: Awaited<ReturnType<typeof openLedger>>) => Promise<T>,
  options: { create?: boolean } = {},
) {
  const config = loadConfig();
  announceDatabase(config.DATABASE_URL, { create: options.create ?? false });
  const ledger = await openLedger(config);
  try {
    return await fn(ledger);
  } finally {
    await ledger.close();
  }
}

/**
 * The absolute path of the SQLite file that DATABASE_URL names (the file `backup` copies and
 * `restore` replaces).
 * @throws BackupError when DATABASE_URL is a PostgreSQL, remote libSQL or in-memory database
 */
function configuredDatabaseFile(): string {
  return embeddedDatabasePath(loadConfig().DATABASE_URL);
}

const program = new Command()
  .name("ledger")
  .description("Credit ledger service: exact balances, reservations, plans, usage costing")
  .version(ledgerVersion(), "-V, --version", "print the version");

program
  .command("serve")
  .description("start the HTTP service (PORT, DATABASE_URL, ... from the environment)")
  .action(async () => {
    const config = loadConfig();
    announceDatabase(config.DATABASE_URL, { create: true });
    const server = await startServer(config);
    const onSignal = () => {
      // A repeated signal (Ctrl-C reaches both npm and the server, and npm forwards its own
      // copy) must not cut the graceful stop short: every signal joins the one stop.
      server.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
      // A last resort if closing hangs: nothing may keep the port after the drain time.
      setTimeout(() => process.exit(1), (config.SHUTDOWN_TIMEOUT_SECONDS + 2) * 1000).unref();
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });

program
  .command("migrate")
  .description("apply pending database migrations")
  .action(() =>
    withLedger(
      async () => {
        process.stdout.write("migrations applied\n");
      },
      { create: true },
    ),
  );

const keys = program.command("keys").description("manage API keys");
keys
  .command("create")
  .description("create an API key for a project (the project is created if new)")
  .requiredOption("--project <name>", "project name")
  .option("--json", 'print {"projectId","keyId","apiKey"}')
  .action((opts: { project: string; json?: boolean }) =>
    withLedger(
      async (ledger) => {
        const { projectId, keyId, apiKey } = await createProjectKey(ledger.queue, opts.project);
        process.stdout.write(
          opts.json
            ? `${JSON.stringify({ projectId, keyId, apiKey })}\n`
            : `project ${opts.project} (${projectId})\nkey id: ${keyId}\napi key (shown once): ${apiKey}\n`,
        );
      },
      { create: true },
    ),
  );
keys
  .command("list")
  .description("list API keys by id (never the secrets), oldest first")
  .option("--project <name>", "only this project's keys")
  .option("--json", 'print {"keys": [{"keyId","projectId","projectName","createdAt","revokedAt"}]}')
  .action((opts: { project?: string; json?: boolean }) =>
    withLedger(async (ledger) => {
      const list = await listKeys(ledger.db.read, opts.project);
      if (list === null) {
        process.stderr.write(`no project named ${opts.project}\n`);
        process.exitCode = 1;
        return;
      }
      process.stdout.write(
        opts.json ? `${JSON.stringify({ keys: list })}\n` : `${formatKeyTable(list)}\n`,
      );
    }),
  );
keys
  .command("revoke")
  .description("revoke an API key, given the key itself or its id (key_...)")
  .argument("<key>", "the API key or its id")
  .action((key: string) =>
    withLedger(async (ledger) => {
      const revoked = await revokeKey(ledger.queue, key);
      if (revoked === null) {
        process.stderr.write("no active key matches\n");
        process.exitCode = 1;
      } else process.stdout.write(`key ${revoked} revoked\n`);
    }),
  );

const project = program.command("project").description("manage a project's settings");
project
  .command("set-price")
  .description("set a project's credit price: credits per USD of model cost (null unsets it)")
  .requiredOption("--project <name>", "project name")
  .argument("<creditsPerUsd>", "credits per USD: > 0, at most 6 decimals, at most 1e9; or null")
  .action((price: string, opts: { project: string }) =>
    withLedger(async (ledger) => {
      const { projectId, creditsPerUsdMicros } = await setProjectPrice(
        ledger.queue,
        opts.project,
        price,
      );
      const shown = creditsPerUsdMicros === null ? "null" : fromMicros(creditsPerUsdMicros).literal;
      process.stdout.write(`project ${opts.project} (${projectId}): creditsPerUsd ${shown}\n`);
    }),
  );

const models = program.command("models").description("manage the model price catalog");
models
  .command("seed")
  .description("load the shipped catalog (data/models.json)")
  .action(() =>
    withLedger(async (ledger) => {
      const n = await seedModels(ledger.queue);
      process.stdout.write(`${n} models loaded\n`);
    }),
  );
models
  .command("import")
  .description("load a pricing file: the service's format or LiteLLM's price map")
  .argument("<file>", "path to the JSON file")
  .option("--provider <name>", "only this provider (openai, anthropic, google, ...)")
  .action((file: string, opts: { provider?: string }) =>
    withLedger(async (ledger) => {
      const { models: list, skipped, format } = await readPricingFile(file, opts.provider);
      const n = await ledger.queue.run((trx, nowMs) => upsertModels(trx, list, nowMs));
      process.stdout.write(`${n} models imported from ${format} file (${skipped} skipped)\n`);
    }),
  );

program
  .command("backup")
  .description("write a checked, consistent copy of the database file, also while it serves")
  .argument("<file>", "the backup file to create (must not exist)")
  .action(async (file: string) => {
    const databasePath = configuredDatabaseFile();
    await withLedger(async () => {});
    const result = await writeBackup(databasePath, file, Date.now());
    process.stdout.write(
      `backup written to ${result.file} (${result.bytes} bytes; checked: ${result.accounts} accounts, ${result.transactions} transactions)\n`,
    );
    if (result.removedLeftovers.length > 0) {
      process.stdout.write(
        `removed what killed backups had left in its folder: ${result.removedLeftovers.join(", ")}\n`,
      );
    }
  });

program
  .command("restore")
  .description("replace the database file by a checked backup (service stopped)")
  .argument("<file>", "the backup file")
  .action(async (file: string) => {
    announceDatabase(loadConfig().DATABASE_URL, { create: false });
    const result = await restoreBackup(configuredDatabaseFile(), file, Date.now());
    process.stdout.write(
      `restored ${file} into ${result.database} (checked: ${result.accounts} accounts, ${result.transactions} transactions)\n${
        result.previous ? `the previous database is kept as ${result.previous}\n` : ""
      }`,
    );
  });

program
  .command("verify")
  .description("check every ledger invariant; exits 1 naming each mismatch")
  .action(() =>
    withLedger(async (ledger) => {
      const report = await verifyLedger(ledger.db.read, Date.now());
      for (const problem of report.problems) process.stdout.write(`MISMATCH ${problem}\n`);
      process.stdout.write(
        `verified ${report.accounts} accounts, ${report.transactions} transactions: ${
          report.problems.length === 0 ? "OK" : `${report.problems.length} problem(s)`
        }\n`,
      );
      if (report.problems.length > 0) process.exitCode = 1;
    }),
  );

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`ledger: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
