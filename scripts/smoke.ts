/**
 * Smoke test of a running service, whatever runs it (Node, Bun, Deno, the single binary).
 *
 *   node dist/scripts/smoke.js [options] -- COMMAND [ARGS...]
 *
 * Starts COMMAND with a fresh temporary DATABASE_URL, a free PORT and LEDGER_BOOTSTRAP_API_KEY,
 * waits for /health, then over HTTP: the model catalog is seeded, a request without a key is
 * refused, an account is created and credited, a hold is reserved and confirmed for less, the
 * balance is exactly the expected one, /ready answers; then SIGTERM, and the process must exit
 * 0 within --stop-timeout. Exits 1 with the reason and the server's output on any failure.
 *
 * Options:
 *   --cwd DIR             run COMMAND in DIR (default: the current directory)
 *   --default-database    leave DATABASE_URL unset: the server must create ./data/ledger.db in
 *                         its working directory (with --cwd, an empty folder: the binary's test)
 *   --start-timeout SEC   how long to wait for /health (default 60)
 *   --stop-timeout SEC    how long the process may take to exit after SIGTERM (default 10)
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "./lib/net.ts";

interface Options {
  command: string[];
  cwd: string;
  defaultDatabase: boolean;
  startTimeoutMs: number;
  stopTimeoutMs: number;
}

/** A failed expectation: reported as one line, then the server's output. */
class SmokeFailure extends Error {}

function fail(message: string): never {
  throw new SmokeFailure(message);
}

function parseOptions(argv: string[]): Options {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      cwd: { type: "string" },
      "default-database": { type: "boolean", default: false },
      "start-timeout": { type: "string", default: "60" },
      "stop-timeout": { type: "string", default: "10" },
    },
  });
  const seconds = (name: string, text: string) => {
    const n = Number(text);
    if (!Number.isFinite(n) || n <= 0) fail(`--${name} must be a positive number of seconds`);
    return n * 1000;
  };
  if (positionals.length === 0) {
    fail("usage: smoke.js [--cwd DIR] [--default-database] -- COMMAND [ARGS...]");
  }
  return {
    command: positionals,
    cwd: resolve(values.cwd ?? "."),
    defaultDatabase: values["default-database"],
    startTimeoutMs: seconds("start-timeout", values["start-timeout"]),
    stopTimeoutMs: seconds("stop-timeout", values["stop-timeout"]),
  };
}

interface Server {
  child: ChildProcess;
  /** Resolves with the exit code (or the signal's name) once the process has exited. */
  exited: Promise<number | string>;
  output: () => string;
}

function startCommand(options: Options, env: NodeJS.ProcessEnv): Server {
  const [file = "", ...args] = options.command;
  const child = spawn(file, args, { cwd: options.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-20_000);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<number | string>((resolveExit) => {
    child.once("error", (err) => {
      keep(Buffer.from(`\n[smoke] cannot start ${file}: ${err.message}\n`));
      resolveExit("spawn error");
    });
    child.once("exit", (code, signal) => resolveExit(code ?? signal ?? "unknown"));
  });
  return { child, exited, output: () => output };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls /health until it answers 200; fails when the process exits first or time runs out. */
async function waitHealthy(base: string, server: Server, timeoutMs: number) {
  let exit: number | string | undefined;
  void server.exited.then((code) => {
    exit = code;
  });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exit !== undefined) fail(`the server exited (${exit}) before /health answered`);
    try {
      const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(1000) });
      if (res.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  fail(`/health did not answer 200 within ${timeoutMs / 1000} s`);
}

type Json = Record<string, unknown>;

/** One request; fails unless it answers `status`. @returns the JSON body */
async function call(
  base: string,
  key: string | null,
  method: "GET" | "POST",
  path: string,
  body?: Json,
  status = 200,
): Promise<Json> {
  const headers: Record<string, string> = {};
  if (key !== null) headers["X-API-Key"] = key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  if (res.status !== status)
    fail(`${method} ${path}: expected ${status}, got ${res.status} ${text}`);
  try {
    return JSON.parse(text) as Json;
  } catch {
    fail(`${method} ${path}: the body is not JSON: ${text.slice(0, 200)}`);
  }
}

function expectFields(what: string, actual: Json, expected: Json) {
  for (const [field, value] of Object.entries(expected)) {
    if (actual[field] !== value) {
      fail(`${what}: ${field} is ${JSON.stringify(actual[field])}, expected ${value}`);
    }
  }
}

/** The flow over HTTP, with the exact numbers it must produce. */
async function exercise(base: string, key: string, log: (line: string) => void) {
  const models = await call(base, key, "GET", "/v1/models");
  const count = Array.isArray(models.models) ? models.models.length : 0;
  if (count === 0) fail("GET /v1/models: the catalog was not seeded");
  log(`model catalog: ${count} models`);
  await call(base, null, "GET", "/v1/models", undefined, 401);

  const id = "smoke-account";
  await call(base, key, "POST", "/v1/accounts/create", { externalId: id, name: "Smoke" });
  // 10.1 + 0.2 is 10.299999999999999 in floating point: the ledger must say 10.3.
  await call(base, key, "POST", "/v1/accounts/credits/add", { accountId: id, amount: 10.1 });
  const added = await call(base, key, "POST", "/v1/accounts/credits/add", {
    accountId: id,
    amount: 0.2,
  });
  expectFields("credits/add", added, { balance: 10.3 });

  const held = await call(base, key, "POST", "/v1/reservations/create", {
    accountId: id,
    amount: 4.25,
    operation: "smoke",
  });
  const reservationId = (held.reservation as Json | undefined)?.id;
  if (typeof reservationId !== "string") fail("reservations/create: no reservation.id");
  const during = await call(base, key, "GET", `/v1/accounts/balance?externalId=${id}`);
  expectFields("balance while held", during, { balance: 10.3, reserved: 4.25, available: 6.05 });

  const confirmed = await call(base, key, "POST", "/v1/reservations/confirm", {
    reservationId,
    actualAmount: 3.125,
  });
  expectFields("reservations/confirm", confirmed, { balance: 7.175, amountReleased: 1.125 });
  const after = await call(base, key, "GET", `/v1/accounts/balance?externalId=${id}`);
  expectFields("balance after confirm", after, { balance: 7.175, reserved: 0, available: 7.175 });
  log("account flow: 10.1 + 0.2 credited, 4.25 held, 3.125 confirmed → balance 7.175");

  expectFields("/ready", await call(base, null, "GET", "/ready"), { status: "ready" });
  log("/ready: ready");
}

/** SIGTERM, then the process must exit 0 within `timeoutMs`. @returns the milliseconds taken */
async function stopGracefully(server: Server, timeoutMs: number): Promise<number> {
  const started = Date.now();
  server.child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolveTimeout) => {
    timer = setTimeout(() => resolveTimeout("timeout"), timeoutMs);
  });
  const code = await Promise.race([server.exited, timeout]);
  clearTimeout(timer);
  if (code === "timeout") fail(`the server did not exit within ${timeoutMs / 1000} s of SIGTERM`);
  if (code !== 0) fail(`the server exited with ${code} after SIGTERM, expected 0`);
  return Date.now() - started;
}

async function main() {
  const started = Date.now();
  const log = (line: string) =>
    process.stdout.write(`[smoke ${((Date.now() - started) / 1000).toFixed(2)}s] ${line}\n`);
  const options = parseOptions(process.argv.slice(2));
  const dataDir = mkdtempSync(join(tmpdir(), "ledger-smoke-"));
  const port = await freePort();
  const key = `ldg_smoke_${randomBytes(16).toString("hex")}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    LEDGER_BOOTSTRAP_API_KEY: key,
    DATABASE_URL: `file:${join(dataDir, "ledger.db")}`,
  };
  const dbFile = options.defaultDatabase
    ? join(options.cwd, "data", "ledger.db")
    : join(dataDir, "ledger.db");
  if (options.defaultDatabase) {
    delete env.DATABASE_URL;
    if (existsSync(dbFile)) fail(`${dbFile} exists already: --default-database needs a fresh cwd`);
  }
  log(`starting: ${options.command.join(" ")} (cwd ${options.cwd}, port ${port})`);
  const server = startCommand(options, env);
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitHealthy(base, server, options.startTimeoutMs);
    log("/health: ok");
    await exercise(base, key, log);
    if (!existsSync(dbFile)) fail(`the database file ${dbFile} was not created`);
    const stopMs = await stopGracefully(server, options.stopTimeoutMs);
    log(`SIGTERM: exited 0 in ${stopMs} ms`);
    // The server logs the runtime serving it ({"msg":"listening","runtime":"bun 1.2.3",...}).
    const runtime = /"runtime":"([^"]+)"/.exec(server.output())?.[1] ?? "not logged";
    log(`PASS (runtime: ${runtime})`);
  } catch (err) {
    server.child.kill("SIGKILL");
    await server.exited;
    const reason = err instanceof SmokeFailure ? err.message : String(err);
    process.stderr.write(`\n--- server output ---\n${server.output()}\n---------------------\n`);
    process.stderr.write(`smoke: FAIL: ${reason}\n`);
    process.exitCode = 1;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`smoke: FAIL: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
