/**
 * The ceiling of `npm run bench`: a bare Hono app on @hono/node-server answering a small JSON
 * POST, so that the service's figures can be read as a fraction of what the HTTP stack allows.
 */
import { serve } from "@hono/node-server";
import { Hono } from "hono";

const app = new Hono();
app.post("/echo", async (c) => {
  const body = await c.req.json<{ accountId?: string; amount?: number }>();
  return c.json({ success: true, accountId: body.accountId ?? null, amount: body.amount ?? 0 });
});

serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 0), hostname: "127.0.0.1" }, (info) => {
  process.stdout.write(`listening ${info.port}\n`);
});
