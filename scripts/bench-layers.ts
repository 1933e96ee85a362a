/**
 * `node dist/scripts/bench-layers.js [--seconds N] [--rounds N]` (after `npm run build`; Linux):
 * how far the service's balance read is from a minimal app on the same adapter, and which of
 * the service's layers make up the distance (docs/benchmarks.md#the-distance-to-a-minimal-app).
 *
 * Funds the bench accounts on a fresh file through the service, then drives the balance read
 * with autocannon (50 connections) against: the bare-Hono ceiling; the minimal balance app of
 * `scripts/lib/layers-app.ts` without layers, with each of the service's layers alone, and with
 * all of them; and the service itself. For each it prints requests a second, p99, and the CPU
 * the serving process spent per answered request (from /proc), each round in turn so that the
 * machine's drift touches every variant alike, then the median of the rounds.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import {
  balanceRead,
  cpuOf,
  fund,
  type Requests,
  startProcess,
  stopProcess,
} from "./lib/bench-kit.ts";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "5" }, rounds: { type: "string", default: "3" } },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const apiKey = `ldg_layers_${randomBytes(16).toString("hex")}`;

interface Variant {
  name: string;
  args: string[];
  env?: Record<string, string>;
  requests: Requests;
}

const layersApp = (layers: string): Variant => ({
  name: `minimal app${layers ? ` + ${layers.replaceAll(",", " + ")}` : ""}`,
  args: [here("./lib/layers-app.js")],
  env: { LAYERS: layers },
  requests: balanceRead,
});

const VARIANTS: Variant[] = [
  {
    name: "ceiling (bare Hono JSON POST)",
    args: [here("./bench-ceiling.js")],
    requests: [{ method: "POST", path: "/echo", body: '{"accountId":"a","amount":1}' }],
  },
  layersApp(""),
  layersApp("validation"),
  layersApp("kysely"),
  layersApp("json"),
  layersApp("observe"),
  layersApp("auth"),
  layersApp("validation,kysely,json,observe,auth"),
  { name: "service", args: [here("../src/cli/index.js"), "serve"], requests: balanceRead },
];

interface Figures {
  reqPerSec: number;
  p99Ms: number;
  cpuUs: number;
}

async function measure(variant: Variant, env: NodeJS.ProcessEnv): Promise<Figures> {
  const { proc, port } = await startProcess(variant.args, { ...env, ...variant.env });
  try {
    const url = `http://127.0.0.1:${port}`;
    const headers = { "X-API-Key": apiKey, "Content-Type": "application/json" };
    const requests = variant.requests;
    await autocannon({ url, connections: 50, duration: 2, headers, requests });
    const before = cpuOf(proc.pid ?? 0);
    const r = await autocannon({ url, connections: 50, duration: SECONDS, headers, requests });
    const cpu = cpuOf(proc.pid ?? 0) - before;
    if (r.non2xx > 0 || r.errors > 0) {
      throw new Error(`${variant.name}: ${r.non2xx} answers not 2xx, ${r.errors} errors`);
    }
    return {
      reqPerSec: Math.round(r.requests.average),
      p99Ms: r.latency.p99,
      cpuUs: Math.round((cpu * 1e6) / Math.max(1, r.requests.total)),
    };
  } finally {
    await stopProcess(proc);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "ledger-layers-"));
  const env = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: `file:${join(dir, "layers.db")}`,
    LEDGER_BOOTSTRAP_API_KEY: apiKey,
    API_KEY: apiKey,
    LOG_LEVEL: "warn",
    SCHEDULER_ENABLED: "false",
  };
  try {
    const funder = await startProcess([here("../src/cli/index.js"), "serve"], env);
    await fund(`http://127.0.0.1:${funder.port}`, apiKey);
    await stopProcess(funder.proc);
    const results = new Map<string, Figures[]>(VARIANTS.map((v) => [v.name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      process.stdout.write(`round ${round} of ${ROUNDS}\n`);
      for (const variant of VARIANTS) {
        const f = await measure(variant, env);
        results.get(variant.name)?.push(f);
        process.stdout.write(
          `  ${variant.name}: ${f.reqPerSec}/s, p99 ${f.p99Ms} ms, ${f.cpuUs} µs CPU per request\n`,
        );
      }
    }
    const ceiling = median((results.get(VARIANTS[0]?.name ?? "") ?? []).map((f) => f.reqPerSec));
    const minimalCpu = median((results.get(VARIANTS[1]?.name ?? "") ?? []).map((f) => f.cpuUs));
    console.log(
      `\nmedian of ${ROUNDS} rounds, ${SECONDS} s each      req/s  of ceiling  p99 ms  µs CPU/req  over minimal`,
    );
    for (const [name, figures] of results) {
      const rps = median(figures.map((f) => f.reqPerSec));
      const cpu = median(figures.map((f) => f.cpuUs));
      const over = name.startsWith("ceiling") ? "" : String(cpu - minimalCpu).padStart(12);
      console.log(
        `${name.padEnd(46)} ${String(rps).padStart(6)} ${(rps / ceiling).toFixed(3).padStart(11)} ${String(median(figures.map((f) => f.p99Ms))).padStart(7)} ${String(cpu).padStart(11)} ${over}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
