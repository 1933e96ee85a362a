/**
 * The service's balance read as a minimal app, with the service's own layers added by `LAYERS`
 * (a comma list), for `node dist/scripts/bench-layers.js` (docs/benchmarks.md#the-distance-to-a-minimal-app).
 * Prints `listening PORT` once it listens.
 *
 * Without layers: @hono/node-server and Hono, the `X-API-Key` compared as text, one prepared
 * libSQL statement (the balance read's SQL: the account's three columns and its pending,
 * unexpired holds) and `c.json` (JSON.stringify, amounts as doubles). Layers:
 * - `validation`: the route as the service defines it (`accountRoutes.balance`: OpenAPIHono, its
 *   zod query schema and the service's validation hook);
 * - `kysely`: the read through the service's Kysely read connection (`readBalance`);
 * - `json`: the answer built by `balanceView` (exact amounts) and written by the service's exact
 *   JSON middleware;
 * - `observe`: the service's request id, metrics and log middleware;
 * - `auth`: the service's API key middleware (keys remembered for 2 s).
 *
 * Environment: DATABASE_URL (a `file:` URL), API_KEY, LAYERS, PORT.
 */
import { serve } from "@hono/node-server";
import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import LibsqlDatabase from "libsql";
import { readBalance } from "../../src/accounts/lookup.ts";
import { accountRoutes } from "../../src/accounts/routes.ts";
import { balanceView } from "../../src/accounts/service.ts";
import { observe, requestId } from "../../src/app.ts";
import { loadConfig } from "../../src/config.ts";
import { filePathOf } from "../../src/db/client.ts";
import { requireApiKey } from "../../src/http/auth.ts";
import type { AppEnv } from "../../src/http/context.ts";
import { exactJsonResponses } from "../../src/http/json.ts";
import { validationHook } from "../../src/http/strict-input.ts";
import { openLedger } from "../../src/runtime.ts";

const layers = new Set((process.env.LAYERS ?? "").split(",").filter(Boolean));
const config = loadConfig({ ...process.env, LOG_LEVEL: "warn" });
const path = filePathOf(config.DATABASE_URL);
if (!path) throw new Error("layers-app needs a file: DATABASE_URL");
const ledger = await openLedger(config);
const raw = new LibsqlDatabase(path);
const balanceSql = raw.prepare(
  `SELECT id, external_id, balance_micros,
     (SELECT coalesce(sum(amount_micros), 0) FROM reservations
       WHERE reservations.account_id = accounts.id AND status = 'pending' AND expires_at_ms > ?)
       AS held_micros
   FROM accounts WHERE project_id = ? AND external_id = ?`,
);
const project = raw.prepare("SELECT id FROM projects LIMIT 1").get() as { id: string };

const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
if (layers.has("json")) app.use("*", exactJsonResponses());
if (layers.has("observe")) {
  app.use("*", requestId);
  app.use("*", observe(ledger.deps));
}
if (layers.has("auth")) app.use("/v1/*", requireApiKey(ledger.deps.db.read));
else {
  app.use("/v1/*", async (c, next) => {
    if (c.req.header("X-API-Key") !== process.env.API_KEY) return c.json({ success: false }, 401);
    c.set("projectId", project.id);
    await next();
  });
}

type Row = { id: string; external_id: string; balance_micros: number; held_micros: number };

/** The balance of `externalId`, read and written as the layers say. */
async function answer(c: Context<AppEnv>, externalId: string): Promise<Response> {
  const projectId = c.get("projectId");
  const nowMs = Date.now();
  if (layers.has("json")) {
    return c.json(await balanceView(ledger.deps.db.read, projectId, { externalId }, nowMs));
  }
  let row: Row | undefined;
  if (layers.has("kysely")) {
    const b = await readBalance(ledger.deps.db.read, projectId, externalId, nowMs, {
      externalId: true,
    });
    row = { ...b.account, balance_micros: b.balance, held_micros: b.reserved };
  } else {
    row = balanceSql.get(nowMs, projectId, externalId) as Row | undefined;
  }
  if (!row) return c.json({ success: false }, 404);
  return c.json({
    accountId: row.id,
    externalId: row.external_id,
    balance: row.balance_micros / 1e6,
    reserved: row.held_micros / 1e6,
    available: (row.balance_micros - row.held_micros) / 1e6,
  });
}

if (layers.has("validation")) {
  // The service's route and query schema; its answer is not typed here (the layers without
  // `json` answer doubles), and zod-openapi does not check answers at run time anyway.
  const route = createRoute({
    ...accountRoutes.balance,
    responses: { 200: { description: "The balance" } },
  });
  app.openapi(route, (c) => answer(c, c.req.valid("query").externalId ?? ""));
} else {
  app.get("/v1/accounts/balance", (c) => answer(c, c.req.query("externalId") ?? ""));
}

serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: "127.0.0.1" }, (info) => {
  process.stdout.write(`listening ${info.port}\n`);
});
