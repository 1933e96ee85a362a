#!/usr/bin/env node
/**
 * The `ledger` command (contract §10): serve, migrate, keys create/revoke, models seed/import,
 * verify. Every command that touches the database applies pending migrations first.
 */
import { Command } from "commander";
import { createProjectKey, seedModels } from "../bootstrap.ts";
import { loadConfig } from "../config.ts";
import { hashApiKey } from "../http/auth.ts";
import { verifyLedger } from "../ledger/verify.ts";
import { readPricingFile, upsertModels } from "../models/service.ts";
import { openLedger } from "../runtime.ts";
import { startServer } from "../server.ts";

/** Runs `fn` over an opened ledger and closes it. */
async function withLedger<T>(fn: (ledger: Awaited<ReturnType<typeof openLedger>>) => Promise<T>) {
  const ledger = await openLedger(loadConfig());
  try {
    return await fn(ledger);
  } finally {
    await ledger.close();
  }
}

const program = new Command()
  .name("ledger")
  .description("Credit ledger service: exact balances, reservations, plans, usage costing");

program
  .command("serve")
  .description("start the HTTP service (PORT, DATABASE_URL, ... from the environment)")
  .action(async () => {
    const server = await startServer(loadConfig());
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => {
        server.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      });
    }
  });

program
  .command("migrate")
  .description("apply pending database migrations")
  .action(() =>
    withLedger(async () => {
      process.stdout.write("migrations applied\n");
    }),
  );

const keys = program.command("keys").description("manage API keys");
keys
  .command("create")
  .description("create an API key for a project (the project is created if new)")
  .requiredOption("--project <name>", "project name")
  .option("--json", 'print {"projectId","apiKey"}')
  .action((opts: { project: string; json?: boolean }) =>
    withLedger(async (ledger) => {
      const { projectId, apiKey } = await createProjectKey(ledger.queue, opts.project);
      process.stdout.write(
        opts.json
          ? `${JSON.stringify({ projectId, apiKey })}\n`
          : `project ${opts.project} (${projectId})\napi key (shown once): ${apiKey}\n`,
      );
    }),
  );
keys
  .command("revoke")
  .description("revoke an API key, given the key itself or its id (key_...)")
  .argument("<key>", "the API key or its id")
  .action((key: string) =>
    withLedger(async (ledger) => {
      const revoked = await ledger.queue.run(async (trx, nowMs) => {
        const result = await trx
          .updateTable("api_keys")
          .set({ revoked_at_ms: nowMs })
          .where((eb) => eb.or([eb("id", "=", key), eb("key_hash", "=", hashApiKey(key))]))
          .where("revoked_at_ms", "is", null)
          .executeTakeFirst();
        return Number(result.numUpdatedRows);
      });
      if (revoked === 0) {
        process.stderr.write("no active key matches\n");
        process.exitCode = 1;
      } else process.stdout.write("key revoked\n");
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
