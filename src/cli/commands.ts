/**
 * What each `ledger` command does (src/cli/index.ts names them and parses their arguments). This
 * module imports the whole service (the database drivers, zod, the HTTP app), which takes a
 * second or more to load: index.ts imports it only once a command runs, so that `ledger --help`,
 * `--version` and a mistyped command answer at once (docs/operations.md#command-line).
 *
 * Every command that touches the database names it on standard error and applies pending
 * migrations first (restore migrates the restored copy); only serve, migrate, keys create and
 * restore create a missing database file (src/cli/database.ts).
 */
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
import { connectStripe, disconnectStripe } from "../stripe/settings.ts";
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

/**
 * `ledger serve`: starts the service and stops it gracefully on SIGTERM or SIGINT (exit 0 once
 * stopped, 1 when the stop failed or outlived SHUTDOWN_TIMEOUT_SECONDS + 2 s).
 */
export async function serve(): Promise<void> {
  const config = loadConfig();
  announceDatabase(config.DATABASE_URL, { create: true });
  const server = await startServer(config);
  const onSignal = () => {
    // A repeated signal (Ctrl-C reaches both npm and the server, and npm forwards its own
    // copy) must not cut the graceful stop short: every signal joins the one stop.
    server.stop().then(
      () => {
        // Not process.exit(0) at once: pino writes asynchronously, and exiting with a line on
        // its way would cut the log short or put "stopped" before the lines preceding it. The
        // process ends when the writes are done; a handle left open may hold it one second.
        process.exitCode = 0;
        setTimeout(() => process.exit(0), 1000).unref();
      },
      () => process.exit(1),
    );
    // A last resort if closing hangs: nothing may keep the port after the drain time.
    setTimeout(() => process.exit(1), (config.SHUTDOWN_TIMEOUT_SECONDS + 2) * 1000).unref();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

/** `ledger migrate`: applies pending migrations, creating the database file when missing. */
export function migrate(): Promise<void> {
  return withLedger(
    async () => {
      process.stdout.write("migrations applied\n");
    },
    { create: true },
  );
}

/** `ledger keys create --project NAME [--json]`: a new key, shown once. */
export function keysCreate(opts: { project: string; json?: boolean }): Promise<void> {
  return withLedger(
    async (ledger) => {
      const { projectId, keyId, apiKey } = await createProjectKey(ledger.queue, opts.project);
      process.stdout.write(
        opts.json
          ? `${JSON.stringify({ projectId, keyId, apiKey })}\n`
          : `project ${opts.project} (${projectId})\nkey id: ${keyId}\napi key (shown once): ${apiKey}\n`,
      );
    },
    { create: true },
  );
}

/** `ledger keys list [--project NAME] [--json]`: exit code 1 for an unknown project. */
export function keysList(opts: { project?: string; json?: boolean }): Promise<void> {
  return withLedger(async (ledger) => {
    const list = await listKeys(ledger.db.read, opts.project);
    if (list === null) {
      process.stderr.write(`no project named ${opts.project}\n`);
      process.exitCode = 1;
      return;
    }
    process.stdout.write(
      opts.json ? `${JSON.stringify({ keys: list })}\n` : `${formatKeyTable(list)}\n`,
    );
  });
}

/** `ledger keys revoke KEY_OR_ID`: exit code 1 when no active key matches. */
export function keysRevoke(key: string): Promise<void> {
  return withLedger(async (ledger) => {
    const revoked = await revokeKey(ledger.queue, key);
    if (revoked === null) {
      process.stderr.write("no active key matches\n");
      process.exitCode = 1;
    } else process.stdout.write(`key ${revoked} revoked\n`);
  });
}

/** `ledger project set-price --project NAME CREDITS_PER_USD|null`. */
export function projectSetPrice(price: string, opts: { project: string }): Promise<void> {
  return withLedger(async (ledger) => {
    const { projectId, creditsPerUsdMicros } = await setProjectPrice(
      ledger.queue,
      opts.project,
      price,
    );
    const shown = creditsPerUsdMicros === null ? "null" : fromMicros(creditsPerUsdMicros).literal;
    process.stdout.write(`project ${opts.project} (${projectId}): creditsPerUsd ${shown}\n`);
  });
}

/**
 * `ledger stripe set --project NAME --webhook-secret whsec_… [--secret-key sk_…]`: connects the
 * project to Stripe (docs/operations.md#stripe). The secrets are never printed; a running
 * service reads them at its next webhook.
 */
export function stripeSet(opts: {
  project: string;
  webhookSecret: string;
  secretKey?: string;
}): Promise<void> {
  return withLedger(async (ledger) => {
    const { projectId } = await connectStripe(ledger.queue, opts.project, {
      webhookSecret: opts.webhookSecret,
      secretKey: opts.secretKey,
    });
    const key = opts.secretKey === undefined ? "no secret key" : "a secret key";
    process.stdout.write(
      `project ${opts.project} (${projectId}): Stripe connected with ${key}; webhook endpoint /stripe/webhooks/${projectId}\n`,
    );
  });
}

/** `ledger stripe unset --project NAME`: disconnects the project from Stripe. */
export function stripeUnset(opts: { project: string }): Promise<void> {
  return withLedger(async (ledger) => {
    const { projectId } = await disconnectStripe(ledger.queue, opts.project);
    process.stdout.write(`project ${opts.project} (${projectId}): Stripe disconnected\n`);
  });
}

/** `ledger models seed`: the shipped catalog (data/models.json). */
export function modelsSeed(): Promise<void> {
  return withLedger(async (ledger) => {
    const n = await seedModels(ledger.queue);
    process.stdout.write(`${n} models loaded\n`);
  });
}

/** `ledger models import FILE [--provider NAME]`. */
export function modelsImport(file: string, opts: { provider?: string }): Promise<void> {
  return withLedger(async (ledger) => {
    const { models: list, skipped, format } = await readPricingFile(file, opts.provider);
    const n = await ledger.queue.run((trx, nowMs) => upsertModels(trx, list, nowMs));
    process.stdout.write(`${n} models imported from ${format} file (${skipped} skipped)\n`);
  });
}

/** `ledger backup FILE` (docs/operations.md, "Backups and restore"). */
export async function backup(file: string): Promise<void> {
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
}

/**
 * `ledger restore FILE`: prints the database file it restored into, whether that file is new
 * (the database, and its folder, did not exist: contract section 22) and where the previous
 * database is kept.
 */
export async function restore(file: string): Promise<void> {
  announceDatabase(loadConfig().DATABASE_URL, { create: true });
  const result = await restoreBackup(configuredDatabaseFile(), file, Date.now());
  const checked = `checked: ${result.accounts} accounts, ${result.transactions} transactions`;
  process.stdout.write(
    result.created
      ? `restored ${file} into ${result.database}, a new database file (${checked})\n`
      : `restored ${file} into ${result.database} (${checked})\n`,
  );
  if (result.previous)
    process.stdout.write(`the previous database is kept as ${result.previous}\n`);
}

/** `ledger verify`: every invariant; exit code 1 naming each mismatch. */
export function verify(): Promise<void> {
  return withLedger(async (ledger) => {
    const report = await verifyLedger(ledger.db.read, Date.now());
    for (const problem of report.problems) process.stdout.write(`MISMATCH ${problem}\n`);
    process.stdout.write(
      `verified ${report.accounts} accounts, ${report.transactions} transactions: ${
        report.problems.length === 0 ? "OK" : `${report.problems.length} problem(s)`
      }\n`,
    );
    if (report.problems.length > 0) process.exitCode = 1;
  });
}
