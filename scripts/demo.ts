/**
 * `npm run demo`: starts the service on an empty database, runs the typical flow over real HTTP
 * with real catalog prices (set the credit price → estimate in credits → reserve the estimate →
 * call the model → confirm with its usage → charge a call without a hold → read the ledger),
 * prints each request and response, and ends with `ledger verify`. The caller does no arithmetic.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { calculateResponse } from "../src/models/schemas.ts";
import { createReservationResponse } from "../src/reservations/schemas.ts";
import { freePort, waitForHealth } from "./lib/net.ts";

const cli = fileURLToPath(new URL("../src/cli/index.js", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "ledger-demo-"));
const apiKey = `ldg_demo_${randomBytes(16).toString("hex")}`;
/** The demo's credit price: what a product might charge, 100 credits per USD of model cost. */
const CREDITS_PER_USD = 100;

async function call(base: string, method: string, path: string, body?: unknown) {
  const headers: Record<string, string> = { "X-API-Key": apiKey };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  console.log(`\n> ${method} ${path}${body === undefined ? "" : ` ${JSON.stringify(body)}`}`);
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json: unknown = await res.json();
  console.log(`< ${res.status} ${JSON.stringify(json, null, 2).replace(/\n/g, "\n  ")}`);
  if (!res.ok) throw new Error(`${method} ${path} failed with ${res.status}`);
  return json;
}

async function flow(base: string): Promise<void> {
  await call(base, "POST", "/v1/project/update", { creditsPerUsd: CREDITS_PER_USD });
  await call(base, "POST", "/v1/accounts/create", {
    externalId: "customer-42",
    name: "Ada Lovelace",
    email: "ada@example.com",
  });
  await call(base, "POST", "/v1/accounts/credits/add", {
    accountId: "customer-42",
    amount: 10,
    description: "Starter pack",
    paymentMethod: "card",
  });
  const estimate = calculateResponse.parse(
    await call(base, "POST", "/v1/models/calculate", {
      modelId: "claude-sonnet-4-5",
      inputTokens: 12000,
      outputTokens: 4000,
    }),
  );
  const hold = createReservationResponse.parse(
    await call(base, "POST", "/v1/reservations/create", {
      accountId: "customer-42",
      amount: estimate.estimatedCostCredits,
      operation: "chat.completion",
      model: "claude-sonnet-4-5",
    }),
  );
  console.log(
    "\n(the product calls the model: 9,500 input tokens, 2,000 of them cached; 3,100 output)",
  );
  await call(base, "POST", "/v1/reservations/confirm", {
    reservationId: hold.reservation.id,
    usage: {
      modelId: "claude-sonnet-4-5",
      inputTokens: 9500,
      outputTokens: 3100,
      cachedTokens: 2000,
    },
  });
  console.log("\n(a call without a hold: recorded and charged at once)");
  await call(base, "POST", "/v1/usage/record", {
    accountId: "customer-42",
    modelId: "claude-sonnet-4-5",
    inputTokens: 1000,
    outputTokens: 200,
    deduct: true,
  });
  await call(base, "GET", "/v1/transactions?accountId=customer-42&include=reservation,usage");
  await call(base, "GET", "/v1/accounts/balance?externalId=customer-42");
  await call(base, "GET", "/v1/usage?summary=true");
}

async function main(): Promise<number> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: "127.0.0.1",
    DATABASE_URL: `file:${join(dir, "demo.db")}`,
    LEDGER_BOOTSTRAP_API_KEY: apiKey,
    LOG_LEVEL: "warn",
  };
  const server: ChildProcess = spawn(process.execPath, [cli, "serve"], { env, stdio: "inherit" });
  try {
    await waitForHealth(base);
    await flow(base);
  } finally {
    server.kill("SIGTERM");
    await new Promise((r) => server.once("exit", r));
  }
  console.log("\n> ledger verify");
  const verify = spawnSync(process.execPath, [cli, "verify"], { env, stdio: "inherit" });
  return verify.status ?? 1;
}

main()
  .then((code) => {
    rmSync(dir, { recursive: true, force: true });
    process.exit(code);
  })
  .catch((err) => {
    console.error(err);
    rmSync(dir, { recursive: true, force: true });
    process.exit(1);
  });
