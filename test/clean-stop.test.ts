/**
 * A clean stop (docs/operations.md, "Stopping"), as real processes of the built `ledger serve`
 * (`npm run build` first): after SIGTERM or SIGINT the embedded database file alone holds every
 * write (its WAL folded in and emptied), so a copy of the `.db` file made after the stop is the
 * whole ledger; and the last log line says the service stopped (and, on a file, that the file is
 * complete). On every test engine for the last line; the file checks on the embedded file.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FreshDatabase, freshDatabase, TEST_TARGET } from "./pg-harness.ts";
import { jsonLines, runCli, spawnServer } from "./processes.ts";

const KEY = "ldg_clean_stop_test_key_0123456789abcdef";
/** Accounts written before the stop, each credited its index + 0.5 credits. */
const ACCOUNTS = 12;

let dir: string;
let database: FreshDatabase;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "ledger-clean-stop-"));
  database = await freshDatabase(dir);
});

afterEach(async () => {
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** POSTs `body` to `path` with the test key; throws unless the answer is 200. */
async function post(base: string, path: string, body: object): Promise<void> {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "X-API-Key": KEY, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
}

/** Starts `ledger serve`, writes ACCOUNTS credited accounts, stops it with `signal`. */
async function writeThenStop(signal: "SIGTERM" | "SIGINT") {
  const server = await spawnServer({
    ...process.env,
    ...database.env,
    LEDGER_BOOTSTRAP_API_KEY: KEY,
    LOG_LEVEL: "info",
  });
  try {
    for (let i = 0; i < ACCOUNTS; i++) {
      await post(server.base, "/v1/accounts/create", { externalId: `stop-${i}` });
      await post(server.base, "/v1/accounts/credits/add", {
        accountId: `stop-${i}`,
        amount: i + 0.5,
      });
    }
    const walBefore = walBytes(join(dir, "ledger.db"));
    server.child.kill(signal);
    const exit = await server.exited;
    return { exit, walBefore, lines: jsonLines(server.stdout()) };
  } finally {
    if (server.child.exitCode === null) server.child.kill("SIGKILL");
  }
}

/** The size of a database's WAL file in bytes; 0 when there is none. */
function walBytes(file: string): number {
  return existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0;
}

describe.runIf(TEST_TARGET === "sqlite")("a clean stop on the embedded file", () => {
  it.each(["SIGTERM", "SIGINT"] as const)(
    "%s leaves every write in the .db file alone and says so last",
    async (signal) => {
      const file = join(dir, "ledger.db");
      const { exit, walBefore, lines } = await writeThenStop(signal);
      expect(exit.code).toBe(0);
      // The writes were in the WAL while the service ran (what a copy of the .db alone lacked).
      expect(walBefore).toBeGreaterThan(32);
      expect(walBytes(file)).toBe(0);
      const last = lines.at(-1);
      expect(last?.msg).toBe("stopped; ledger.db is complete");
      expect(last?.database).toBe(file);
      expect(last?.level).toBe(30);
      expect(lines.map((l) => l.msg)).toContain("shutting down");

      // The .db file alone, copied elsewhere, is the whole ledger.
      const elsewhere = join(dir, "copy", "ledger.db");
      mkdirSync(join(dir, "copy"));
      copyFileSync(file, elsewhere);
      const env = { ...process.env, DATABASE_URL: `file:${elsewhere}`, LOG_LEVEL: "silent" };
      const verified = runCli(["verify"], env);
      expect(verified.stdout).toContain(
        `verified ${ACCOUNTS} accounts, ${ACCOUNTS} transactions: OK`,
      );
      expect(verified.status).toBe(0);
      const served = await spawnServer(env);
      try {
        for (let i = 0; i < ACCOUNTS; i++) {
          const res = await fetch(`${served.base}/v1/accounts/balance?externalId=stop-${i}`, {
            headers: { "X-API-Key": KEY },
          });
          expect(res.status).toBe(200);
          expect(((await res.json()) as { balance: number }).balance).toBe(i + 0.5);
        }
      } finally {
        served.child.kill("SIGTERM");
        await served.exited;
      }
    },
    60_000,
  );
});

describe.runIf(TEST_TARGET !== "sqlite")("a clean stop on a database server", () => {
  it("ends with the line saying it stopped", async () => {
    const { exit, lines } = await writeThenStop("SIGTERM");
    expect(exit.code).toBe(0);
    expect(lines.at(-1)?.msg).toBe("stopped");
  }, 60_000);
});
