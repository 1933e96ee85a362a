/**
 * Helpers of the backup and restore tests: a database large enough that a backup takes a while,
 * a `ledger backup` killed mid-way, and fingerprints of files to prove they did not change.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Kysely } from "kysely";
import LibsqlDatabase from "libsql";
import { NativeSqliteDialect } from "../src/db/native-driver.ts";
import type { DB } from "../src/db/schema.ts";
import { cliPath, runCli } from "./processes.ts";

/** Opens a database file in the test. */
export function openFile(path: string): Kysely<DB> {
  return new Kysely<DB>({ dialect: new NativeSqliteDialect(new LibsqlDatabase(path)) });
}

/**
 * Creates the ledger of `env.DATABASE_URL` with `accounts` accounts of about 1.5 KB each (zero
 * balances: every invariant holds), so that a backup of it takes seconds.
 */
export function bigDatabase(env: NodeJS.ProcessEnv, path: string, accounts: number): void {
  const created = runCli(["keys", "create", "--project", "p"], env);
  if (created.status !== 0) throw new Error(created.stderr);
  const db = new LibsqlDatabase(path);
  try {
    db.exec(`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${accounts})
      INSERT INTO accounts (id, project_id, external_id, name, email, metadata,
        plan_bucket_account_plan_id, created_at_ms, updated_at_ms)
      SELECT 'acc_big_' || i, (SELECT id FROM projects LIMIT 1), 'big-' || i, '', '',
        json_object('pad', hex(randomblob(700))), NULL, i, i
      FROM n`);
  } finally {
    db.close();
  }
}

/** The files of `dir` whose names match `pattern`. */
export function filesMatching(dir: string, pattern: RegExp): string[] {
  return readdirSync(dir)
    .filter((name) => pattern.test(name))
    .sort();
}

/**
 * Starts `ledger backup FILE` and SIGKILLs it once its temporary copy beside FILE holds at least
 * `bytes` bytes.
 * @returns the temporary files it left (names in FILE's folder)
 */
export async function killBackupMidway(
  env: NodeJS.ProcessEnv,
  dir: string,
  name: string,
  bytes = 4 * 1024 * 1024,
): Promise<string[]> {
  const child = spawn(process.execPath, [cliPath, "backup", join(dir, name)], {
    env,
    stdio: "ignore",
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("exit", (_code, signal) => resolve(signal)),
  );
  const temporary = new RegExp(`^\\.${name.replaceAll(".", "\\.")}\\..*\\.tmp$`);
  const deadline = performance.now() + 60_000;
  for (;;) {
    const [main] = filesMatching(dir, temporary);
    if (main && statSync(join(dir, main)).size >= bytes) break;
    if (child.exitCode !== null) throw new Error("the backup ended before it could be killed");
    if (performance.now() > deadline) throw new Error("no temporary file grew");
    await new Promise((r) => setTimeout(r, 10));
  }
  child.kill("SIGKILL");
  if ((await exited) !== "SIGKILL") throw new Error("the backup was not killed");
  return filesMatching(dir, new RegExp(`^\\.${name.replaceAll(".", "\\.")}\\..*\\.tmp`));
}

/** The sha256 of each of `paths` that exists (a missing one maps to "missing"). */
export function hashes(paths: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const path of paths) {
    out[path] = existsSync(path)
      ? createHash("sha256").update(readFileSync(path)).digest("hex")
      : "missing";
  }
  return out;
}

/** `path` and the journal, WAL and shared-memory files SQLite may keep beside it. */
export function withNeighbours(path: string): string[] {
  return ["", "-journal", "-wal", "-shm"].map((suffix) => `${path}${suffix}`);
}
