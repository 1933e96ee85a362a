/**
 * `npm run bench`: the service's throughput and latency on this machine
 * (docs/operations.md#performance).
 *
 * Starts the built service on a fresh database file with 1,000 funded accounts and a bare Hono
 * ceiling app, each in its own process, then drives each scenario with autocannon (in this
 * process) for BENCH_SECONDS (10) after a 2 s warm-up at 50 connections. Prints req/s, p50, p99,
 * errors and req/s as a fraction of the ceiling; then stops the service, runs `ledger verify`,
 * and checks that the ledger holds exactly one row per successful write. Results also go to
 * bench-results/bench-<time>.json.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import LibsqlDatabase from "libsql";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP_SECONDS = 2;
const CONNECTIONS = 50;
const ACCOUNTS = 1000;
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const cli = here("../src/cli/index.js");
const dir = mkdtempSync(join(tmpdir(), "ledger-bench-"));
const dbFile = join(dir, "bench.db");
const apiKey = `ldg_bench_${randomBytes(16).toString("hex")}`;

interface Row {
  scenario: string;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  ok: number;
  ofCeiling?: number;
}

function start(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ proc: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    proc.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const m = /(?:listening |localhost:)(\d+)/.exec(out);
      if (m) resolve({ proc, port: Number(m[1]) });
    });
    proc.once("exit", (code) => reject(new Error(`${args[0]} exited with ${code}: ${out}`)));
  });
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  proc.kill("SIGTERM");
  await new Promise((r) => proc.once("exit", r));
}

const account = () => `bench-${Math.floor(Math.random() * ACCOUNTS)}`;
const json = (body: unknown) => JSON.stringify(body);

type Requests = NonNullable<autocannon.Options["requests"]>;
type Ctx = { reservationId?: string };

async function drive(url: string, requests: Requests, seconds: number) {
  return autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { "X-API-Key": apiKey, "Content-Type": "application/json" },
    requests,
  });
}

/** Runs a warm-up and a measured run; `perOp` divides req/s for multi-request scenarios. */
async function scenario(name: string, url: string, requests: Requests, perOp = 1): Promise<Row> {
  const warm = await drive(url, requests, WARMUP_SECONDS);
  const r = await drive(url, requests, SECONDS);
  const row = {
    scenario: name,
    reqPerSec: Math.round(r.requests.average / perOp),
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    errors: r.errors + r.non2xx + r.timeouts,
    ok: r["2xx"] + warm["2xx"],
  };
  process.stdout.write(
    `  ${name}: ${row.reqPerSec} /s, p99 ${row.p99Ms} ms, errors ${row.errors}\n`,
  );
  return row;
}

async function fund(base: string): Promise<void> {
  const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
  for (let i = 0; i < ACCOUNTS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, async (_, k) => {
        const externalId = `bench-${i + k}`;
        const post = (path: string, body: unknown) =>
          fetch(base + path, { method: "POST", headers, body: json(body) }).then((r) => {
            if (!r.ok) throw new Error(`${path} ${r.status}`);
          });
        await post("/v1/accounts/create", { externalId });
        await post("/v1/accounts/credits/add", { accountId: externalId, amount: 1_000_000 });
      }),
    );
  }
}

function reserveConfirm(counter: { confirmed: number }): Requests {
  return [
    {
      method: "POST",
      path: "/v1/reservations/create",
      setupRequest: (req) => ({ ...req, body: json({ accountId: account(), amount: 2 }) }),
      onResponse: (status, body, context) => {
        if (status === 200) (context as Ctx).reservationId = JSON.parse(body).reservation.id;
      },
    },
    {
      method: "POST",
      path: "/v1/reservations/confirm",
      setupRequest: (req, context) => ({
        ...req,
        body: json({ reservationId: (context as Ctx).reservationId, actualAmount: 1.5 }),
      }),
      onResponse: (status) => {
        if (status === 200) counter.confirmed++;
      },
    },
  ];
}

/** The service's count of 200 answers per write route, from GET /metrics. */
async function acknowledgedWrites(base: string) {
  const text = await (await fetch(`${base}/metrics`)).text();
  const count = (route: string) => {
    const line = text
      .split("\n")
      .find(
        (l) =>
          l.startsWith("ledger_http_requests_total{") &&
          l.includes(`route="${route}"`) &&
          l.includes('status="200"'),
      );
    return line ? Number(line.split(" ").at(-1)) : 0;
  };
  return {
    add: count("/v1/accounts/credits/add"),
    deduct: count("/v1/accounts/credits/deduct"),
    confirm: count("/v1/reservations/confirm"),
  };
}

async function main(): Promise<void> {
  const ceiling = await start([here("./bench-ceiling.js")], { ...process.env, PORT: "0" });
  const env = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: `file:${dbFile}`,
    LEDGER_BOOTSTRAP_API_KEY: apiKey,
    LOG_LEVEL: "warn",
  };
  const service = await start([cli, "serve"], env);
  const base = `http://127.0.0.1:${service.port}`;
  const rows: Row[] = [];
  const counter = { confirmed: 0 };
  let writes = { add: 0, deduct: 0, confirm: 0 };
  try {
    process.stdout.write(`funding ${ACCOUNTS} accounts...\n`);
    await fund(base);
    const ceilingRow = await scenario(
      `ceiling (bare Hono JSON POST)`,
      `http://127.0.0.1:${ceiling.port}`,
      [{ method: "POST", path: "/echo", body: json({ accountId: "a", amount: 1 }) }],
    );
    rows.push(ceilingRow);
    rows.push(
      await scenario("deduct", base, [
        {
          method: "POST",
          path: "/v1/accounts/credits/deduct",
          setupRequest: (req) => ({ ...req, body: json({ accountId: account(), amount: 0.5 }) }),
        },
      ]),
    );
    rows.push(await scenario("reserve+confirm (pairs)", base, reserveConfirm(counter), 2));
    rows.push(
      await scenario("balance read", base, [
        {
          method: "GET",
          setupRequest: (req) => ({ ...req, path: `/v1/accounts/balance?externalId=${account()}` }),
        },
      ]),
    );
    rows.push(
      await scenario("transactions page", base, [
        {
          method: "GET",
          setupRequest: (req) => ({
            ...req,
            path: `/v1/transactions?accountId=${account()}&limit=20`,
          }),
        },
      ]),
    );
    rows.push(
      await scenario("usage record", base, [
        {
          method: "POST",
          path: "/v1/usage/record",
          setupRequest: (req) => ({
            ...req,
            body: json({
              accountId: account(),
              modelId: "gpt-4o",
              inputTokens: 1200,
              outputTokens: 300,
            }),
          }),
        },
      ]),
    );
    writes = await acknowledgedWrites(base);
  } finally {
    await stop(service.proc);
    await stop(ceiling.proc);
  }
  for (const row of rows)
    row.ofCeiling = Math.round((row.reqPerSec / (rows[0]?.reqPerSec ?? 1)) * 1000) / 1000;
  console.log("\nscenario                         req/s     p50 ms  p99 ms  errors  of ceiling");
  for (const r of rows) {
    console.log(
      `${r.scenario.padEnd(32)} ${String(r.reqPerSec).padStart(7)} ${String(r.p50Ms).padStart(9)} ${String(r.p99Ms).padStart(7)} ${String(r.errors).padStart(7)} ${String(r.ofCeiling).padStart(11)}`,
    );
  }
  const verify = spawnSync(process.execPath, [cli, "verify"], { env, encoding: "utf8" });
  process.stdout.write(`\nledger verify: ${verify.stdout.trim()}\n`);
  // Successful writes as the service counted its 200 answers (ledger_http_requests_total): the
  // client's own count misses requests still in flight when autocannon stops, which the
  // service did commit and answer.
  const expectedRows = writes.add + writes.deduct + writes.confirm;
  const db = new LibsqlDatabase(dbFile);
  const { n } = db.prepare("SELECT count(*) AS n FROM transactions").get() as { n: number };
  db.close();
  const rowsMatch = n === expectedRows;
  process.stdout.write(
    `ledger rows ${n}, successful writes ${expectedRows} (${writes.add} adds + ${writes.deduct} deducts + ${writes.confirm} confirms answered 200): ${rowsMatch ? "equal" : "MISMATCH"}\n`,
  );
  const outDir = here("../../bench-results");
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, `bench-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  writeFileSync(
    file,
    json({
      seconds: SECONDS,
      connections: CONNECTIONS,
      rows,
      ledgerRows: n,
      expectedRows,
      verify: verify.stdout.trim(),
    }),
  );
  process.stdout.write(`results: ${file}\n`);
  rmSync(dir, { recursive: true, force: true });
  if (verify.status !== 0 || !rowsMatch) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
