/**
 * The log stream of a real `ledger serve` process (its standard output, JSON lines): a scheduled
 * job that found nothing to do logs nothing above debug, one that did something logs at info; a
 * failed request's line carries its error code; no API key appears in any JSON line (the
 * bootstrap key is printed once, as plain text, and not at all when it was chosen).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { maskKeys } from "../src/logger.ts";
import { type FreshDatabase, freshDatabase } from "./pg-harness.ts";
import { jsonLines, type RunningProcess, spawnServer } from "./processes.ts";

const EVERY_SECOND = "* * * * * *";

describe("log stream of a running server", () => {
  let dir: string;
  let database: FreshDatabase;
  let server: RunningProcess | undefined;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-logs-"));
    database = await freshDatabase(dir);
  });
  afterEach(async () => {
    if (server && server.child.exitCode === null) {
      server.child.kill("SIGTERM");
      await server.exited;
    }
    server = undefined;
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (env: Record<string, string>) => {
    server = await spawnServer({
      ...process.env,
      ...database.env,
      EXPIRE_CRON: EVERY_SECOND,
      GRANT_CRON: EVERY_SECOND,
      ...env,
    });
    return server;
  };
  const stop = async (s: RunningProcess) => {
    s.child.kill("SIGTERM");
    expect((await s.exited).code).toBe(0);
  };

  it("quiet idle jobs, error codes on failed requests, no key in any JSON line", async () => {
    const s = await start({ LOG_LEVEL: "info" });
    const key = /shown only this once:\s+(ldg_[\w-]+)/.exec(s.stdout())?.[1] ?? "";
    expect(key).toMatch(/^ldg_[\w-]{43}$/);
    const wrongKey = "ldg_wrong0key0that0must0not0appear0in0logs000";
    const call = (method: string, path: string, body?: object, apiKey = key) =>
      fetch(`${s.base}${path}`, {
        method,
        headers: { "X-API-Key": apiKey, "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then((r) => r.status);

    // Jobs run every second and find nothing to do.
    await new Promise((r) => setTimeout(r, 2200));
    expect(await call("POST", "/v1/accounts/create", { externalId: "c1" })).toBe(200);
    expect(await call("POST", "/v1/accounts/credits/add", { accountId: "c1", amount: 5 })).toBe(
      200,
    );
    expect(await call("POST", "/v1/accounts/credits/deduct", { accountId: "c1", amount: 50 })).toBe(
      402,
    );
    expect(await call("GET", "/v1/accounts/get?accountId=nobody")).toBe(404);
    expect(await call("GET", "/v1/accounts", undefined, wrongKey)).toBe(401);
    expect(await call("POST", "/v1/accounts/create", { externalId: 7 })).toBe(400);
    expect(await call("GET", "/v1/no-such-route")).toBe(404);
    // A hold that expires within a second: the sweeper has something to do.
    expect(
      await call("POST", "/v1/reservations/create", { accountId: "c1", amount: 1, ttlSeconds: 1 }),
    ).toBe(200);
    await new Promise((r) => setTimeout(r, 2600));
    await stop(s);

    const lines = jsonLines(s.stdout());
    const jobLines = lines.filter((l) => l.msg === "job run");
    // Several seconds of idle runs, none of them at info; the one sweep that expired a hold is.
    expect(jobLines).toEqual([
      expect.objectContaining({ level: 30, job: "expire-reservations", result: 1 }),
    ]);
    const requests = lines.filter((l) => l.msg === "request");
    expect(requests.map((l) => [l.route, l.status, l.code])).toEqual([
      ["/v1/accounts/create", 200, undefined],
      ["/v1/accounts/credits/add", 200, undefined],
      ["/v1/accounts/credits/deduct", 402, "INSUFFICIENT_CREDITS"],
      ["/v1/accounts/get", 404, "ACCOUNT_NOT_FOUND"],
      ["/v1/accounts", 401, "UNAUTHORIZED"],
      ["/v1/accounts/create", 400, "VALIDATION_ERROR"],
      ["unmatched", 404, "NOT_FOUND"],
      ["/v1/reservations/create", 200, undefined],
    ]);
    const jsonText = s
      .stdout()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .join("\n");
    expect(jsonText).not.toContain(key);
    expect(jsonText).not.toContain(wrongKey);
    expect(jsonText).not.toContain("ldg_");
    // The bootstrap key was printed exactly once, outside the JSON lines.
    expect(s.stdout().split(key)).toHaveLength(2);
  }, 30_000);

  it("logs idle job runs at debug when asked, and never prints a chosen bootstrap key", async () => {
    const chosen = "ldg_chosen_bootstrap_key_0123456789";
    const s = await start({ LOG_LEVEL: "debug", LEDGER_BOOTSTRAP_API_KEY: chosen });
    await new Promise((r) => setTimeout(r, 1600));
    await stop(s);
    const idle = jsonLines(s.stdout()).filter((l) => l.msg === "job run");
    expect(idle.length).toBeGreaterThanOrEqual(2);
    for (const line of idle) expect(line.level).toBe(20);
    expect(s.stdout()).not.toContain(chosen);
    expect(s.stdout()).toContain('Created project "default"');
  }, 30_000);

  it("masks key-shaped text wherever it is in a line", () => {
    const line = `{"err":"SELECT … WHERE key = 'ldg_AbCdEfGhIjKlMnOpQrStUv-_0123'","url":"/x?k=ldg_${"z".repeat(43)}"}`;
    const masked = maskKeys(line);
    expect(masked).not.toMatch(/ldg_(?!\[redacted\])/);
    expect(masked.match(/ldg_\[redacted\]/g)).toHaveLength(2);
    expect(maskKeys('{"msg":"request","status":200}')).toBe('{"msg":"request","status":200}');
  });
});
