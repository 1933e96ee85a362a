/**
 * The `ledger` command, run as a real process on a fresh database of the test engine: a file,
 * or a PostgreSQL database (test/pg-harness.ts). Needs `npm run build`, which `npm test` runs
 * first.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { openLedger } from "../src/runtime.ts";
import { type FreshDatabase, freshDatabase, TEST_ENGINE } from "./pg-harness.ts";

const cli = new URL("../dist/src/cli/index.js", import.meta.url).pathname;
/** LiteLLM's full price map, when LITELLM_PRICES_FILE names it (else its test is skipped). */
const litellm = process.env.LITELLM_PRICES_FILE ?? "";

describe("ledger CLI", () => {
  let dir: string;
  let database: FreshDatabase;
  let env: NodeJS.ProcessEnv;
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [cli, ...args], { env, encoding: "utf8" });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-cli-"));
    database = await freshDatabase(dir);
    env = { ...process.env, ...database.env, LOG_LEVEL: "silent" };
  });
  afterEach(async () => {
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("migrates a fresh database", async () => {
    const r = run("migrate");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("migrations applied");
    if (TEST_ENGINE === "sqlite") expect(existsSync(join(dir, "ledger.db"))).toBe(true);
    const ledger = await openLedger(loadConfig(database.env));
    try {
      expect(await ledger.db.read.selectFrom("accounts").selectAll().execute()).toEqual([]);
    } finally {
      await ledger.close();
    }
  });

  it("creates a key with --json and revokes it exactly once", () => {
    const r = run("keys", "create", "--project", "acme", "--json");
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { projectId: string; apiKey: string };
    expect(out.projectId).toMatch(/^prj_/);
    expect(out.apiKey.length).toBeGreaterThanOrEqual(40);
    const revoke = run("keys", "revoke", out.apiKey);
    expect(revoke.status).toBe(0);
    expect(run("keys", "revoke", out.apiKey).status).toBe(1);
  });

  it("seeds the shipped catalog", () => {
    // Only serve, migrate, keys create and restore create the database
    // (docs/operations.md#command-line).
    expect(run("migrate").status).toBe(0);
    expect(run("models", "seed").stdout).toMatch(/^\d+ models loaded/);
  });

  it.skipIf(!existsSync(litellm))("imports LiteLLM's price map with a provider filter", () => {
    expect(run("migrate").status).toBe(0);
    const r = run("models", "import", litellm, "--provider", "anthropic");
    expect(r.status).toBe(0);
    const imported = Number(/^(\d+) models imported from litellm/.exec(r.stdout)?.[1]);
    expect(imported).toBeGreaterThan(10);
  });

  it("verify passes on a consistent ledger and names each mismatch", async () => {
    const ledger = await openLedger(loadConfig(database.env));
    await ledger.queue.run(async (trx) => {
      await trx
        .insertInto("projects")
        .values({ id: "prj_1", name: "p", created_at_ms: 0 })
        .execute();
      await trx
        .insertInto("accounts")
        .values({
          id: "acc_1",
          project_id: "prj_1",
          external_id: "x",
          name: "",
          email: "",
          metadata: null,
          plan_bucket_account_plan_id: null,
          created_at_ms: 0,
          updated_at_ms: 0,
        })
        .execute();
    });
    await ledger.close();
    const ok = run("verify");
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain("verified 1 accounts, 0 transactions: OK");

    const broken = await openLedger(loadConfig(database.env));
    await broken.queue.run((trx) =>
      trx
        .updateTable("accounts")
        .set({ balance_micros: 5_000_000 })
        .where("id", "=", "acc_1")
        .execute(),
    );
    await broken.close();
    const bad = run("verify");
    expect(bad.status).toBe(1);
    expect(bad.stdout).toContain("MISMATCH account acc_1: balance 5 != credits - debits 0");
    expect(bad.stdout).toContain("last balanceAfter 0 != balance 5");
  });

  it("prints usage for an unknown command", () => {
    expect(() => execFileSync(process.execPath, [cli, "nope"], { env, stdio: "pipe" })).toThrow();
  });
});
