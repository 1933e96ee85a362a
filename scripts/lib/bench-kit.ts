/**
 * What the bench (scripts/bench.ts) and the profiler (scripts/profile.ts) share: starting and
 * stopping a process that prints the port it listens on, funding the bench accounts, and the
 * request scenarios driven by autocannon (docs/benchmarks.md).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type autocannon from "autocannon";

/** Accounts funded for a run: `bench-0` … `bench-999`, 1,000,000 credits each. */
export const ACCOUNTS = 1000;

export type Requests = NonNullable<autocannon.Options["requests"]>;
type Ctx = { reservationId?: string };

const json = (body: unknown) => JSON.stringify(body);
const account = () => `bench-${Math.floor(Math.random() * ACCOUNTS)}`;

/**
 * Starts `node ARGS` and resolves once it prints the port it listens on.
 * @param nodeOptions options for node itself (e.g. `--cpu-prof`)
 */
export function startProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
  nodeOptions: string[] = [],
): Promise<{ proc: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...nodeOptions, ...args], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    // The service prints `listening on http://ADDRESS:PORT` on stderr, the bench apps
    // `listening PORT` on stdout.
    const seen = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening (?:on http:\/\/\S+:)?(\d+)/.exec(out);
      if (m) resolve({ proc, port: Number(m[1]) });
    };
    proc.stdout?.on("data", seen);
    proc.stderr?.on("data", (chunk: Buffer) => {
      process.stderr.write(chunk);
      seen(chunk);
    });
    proc.once("exit", (code) => reject(new Error(`${args[0]} exited with ${code}: ${out}`)));
  });
}

/** Clock ticks per second of /proc's CPU times (USER_HZ). */
const TICK = 100;

/** CPU seconds (user + system) of process `pid` from /proc (Linux), 0 when it is gone. */
export function cpuOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) / TICK;
  } catch {
    return 0;
  }
}

/** SIGTERM, then waits for the exit. */
export async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  proc.kill("SIGTERM");
  await new Promise((r) => proc.once("exit", r));
}

/** Creates and funds the bench accounts through the service at `base`, 50 at a time. */
export async function fund(base: string, apiKey: string): Promise<void> {
  const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
  const post = async (path: string, body: unknown) => {
    const r = await fetch(base + path, { method: "POST", headers, body: json(body) });
    if (!r.ok) throw new Error(`${path} ${r.status}`);
  };
  for (let i = 0; i < ACCOUNTS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, async (_, k) => {
        const externalId = `bench-${i + k}`;
        await post("/v1/accounts/create", { externalId });
        await post("/v1/accounts/credits/add", { accountId: externalId, amount: 1_000_000 });
      }),
    );
  }
}

/** The bench project's credit price: 100 credits per USD (docs/api.md#charging-usage-in-credits). */
export async function setCreditPrice(base: string, apiKey: string): Promise<void> {
  const r = await fetch(`${base}/v1/project/update`, {
    method: "POST",
    headers: { "X-API-Key": apiKey, "Content-Type": "application/json" },
    body: json({ creditsPerUsd: 100 }),
  });
  if (!r.ok) throw new Error(`/v1/project/update ${r.status}`);
}

/** A deduction of 0.5 credits from a random bench account. */
export const deduct: Requests = [
  {
    method: "POST",
    path: "/v1/accounts/credits/deduct",
    setupRequest: (req) => ({ ...req, body: json({ accountId: account(), amount: 0.5 }) }),
  },
];

/** Deductions in one batch of the batch scenario. */
export const BATCH_SIZE = 1000;
/** Accounts the batch scenario spreads its deductions over. */
const BATCH_ACCOUNTS = 100;

/**
 * A batch (`POST /v1/batch`) of BATCH_SIZE deductions of 0.5 credits over the first 100 bench
 * accounts, each drawn at random; a 200 whose `committed` is not BATCH_SIZE, or any other
 * answer, counts in `count.incomplete`.
 */
export function batchDeduct(count: { incomplete: number }): Requests {
  return [
    {
      method: "POST",
      path: "/v1/batch",
      setupRequest: (req) => {
        const operations = Array.from({ length: BATCH_SIZE }, () => ({
          path: "/v1/accounts/credits/deduct",
          body: { accountId: `bench-${Math.floor(Math.random() * BATCH_ACCOUNTS)}`, amount: 0.5 },
        }));
        return { ...req, body: json({ operations }) };
      },
      onResponse: (status, body) => {
        const committed =
          status === 200 ? (JSON.parse(body) as { committed?: number }).committed : 0;
        if (committed !== BATCH_SIZE) count.incomplete++;
      },
    },
  ];
}

/** A hold of 2 credits, then its confirm at 1.5; `counter.confirmed` counts the confirms. */
export function reserveConfirm(counter: { confirmed: number }): Requests {
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

/** The balance view of a random bench account. */
export const balanceRead: Requests = [
  {
    method: "GET",
    setupRequest: (req) => ({ ...req, path: `/v1/accounts/balance?externalId=${account()}` }),
  },
];

/** The newest 20 ledger entries of a random bench account. */
export const transactionsPage: Requests = [
  {
    method: "GET",
    setupRequest: (req) => ({ ...req, path: `/v1/transactions?accountId=${account()}&limit=20` }),
  },
];

/** A usage record of a random bench account. */
export const usageRecord: Requests = [
  {
    method: "POST",
    path: "/v1/usage/record",
    setupRequest: (req) => ({
      ...req,
      body: json({ accountId: account(), modelId: "gpt-4o", inputTokens: 1200, outputTokens: 300 }),
    }),
  },
];

/**
 * A usage record of a random bench account charged in credits (`deduct: true`): 1,200 input and
 * 300 output tokens of gpt-4o, 0.006 USD, 0.6 credits at the bench's price (`setCreditPrice`).
 */
export const usageDeduct: Requests = [
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
        deduct: true,
      }),
    }),
  },
];
