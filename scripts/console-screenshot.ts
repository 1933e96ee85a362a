/**
 * Takes the screenshot of the console's account page in docs/ (docs/operations.md#operator-console):
 * starts the service on a fresh database with one example account (credits, a promotional grant
 * that expires, a deduction, a pending reservation, and 30 days of LLM usage on three models),
 * signs in to `/console` in headless Chromium and saves the account's page.
 *
 *   npm run build && node dist/scripts/console-screenshot.js [--out docs/console-account.png]
 *
 * Needs /usr/bin/chromium. Everything runs on 127.0.0.1.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { createProjectKey } from "../src/db/api-keys.ts";
import { serveHttp } from "../src/http/serve.ts";
import { seedModels } from "../src/models/seed.ts";
import { openLedger } from "../src/runtime.ts";
import { recordUsage } from "../src/usage/service.ts";

const DAY_MS = 86_400_000;
const { values } = parseArgs({
  options: { out: { type: "string", default: "docs/console-account.png" } },
});

/** A small deterministic sequence, so that the picture is the same each time. */
function wave(day: number, salt: number): number {
  return Math.abs(Math.sin(day * 1.7 + salt) * 10_000) % 1;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "ledger-screenshot-"));
  const ledger = await openLedger(loadConfig({ DATABASE_URL: `file:${join(dir, "shot.db")}` }));
  const server = await serveHttp({
    fetch: createApp(ledger.deps).fetch,
    port: 0,
    hostname: "127.0.0.1",
  });
  const base = `http://127.0.0.1:${server.port}`;
  try {
    await seedModels(ledger.queue);
    const { projectId, apiKey } = await createProjectKey(ledger.queue, "example");
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "X-API-Key": apiKey, "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { account?: { id: string } };
    };
    const created = await post("/v1/accounts/create", {
      externalId: "acme-corp",
      name: "Acme Corp",
      email: "billing@acme.example",
    });
    for (const [externalId, name] of [
      ["globex", "Globex"],
      ["initech", "Initech"],
    ]) {
      await post("/v1/accounts/create", { externalId, name });
    }
    const accountId = created.account?.id ?? "";
    const now = Date.now();
    // 30 days of usage, on three models.
    const models = ["gpt-4o", "claude-sonnet-4-5", "gpt-4o-mini"];
    for (let day = 29; day >= 0; day--) {
      for (const [m, modelId] of models.entries()) {
        const calls = 1 + Math.floor(wave(day, m) * 4);
        for (let c = 0; c < calls; c++) {
          const at = now - day * DAY_MS - (c + 1) * 600_000;
          await ledger.queue.run((trx) =>
            recordUsage(
              trx,
              projectId,
              {
                context: "customer",
                accountRef: accountId,
                modelId,
                usageType: "text",
                inputTokens: 20_000 + Math.floor(wave(day, m + c) * 60_000),
                outputTokens: 2_000 + Math.floor(wave(day, m + c + 7) * 9_000),
                cachedTokens: 4_000,
              },
              at,
            ),
          );
        }
      }
    }
    await post("/v1/accounts/credits/add", {
      accountId,
      amount: 500,
      description: "Card payment",
      paymentMethod: "card",
    });
    await post("/v1/accounts/credits/add", {
      accountId,
      amount: 100,
      description: "Welcome promotion",
      priority: 10,
      expiresAt: new Date(now + 30 * DAY_MS).toISOString(),
    });
    await post("/v1/accounts/credits/deduct", {
      accountId,
      amount: 42.75,
      description: "Report generation",
    });
    await post("/v1/reservations/create", {
      accountId,
      amount: 12.5,
      operation: "chat.completion",
      model: "gpt-4o",
      ttlSeconds: 3600,
    });

    const browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
    });
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(`${base}/console`);
      await page.getByLabel("API key").fill(apiKey);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("link", { name: "acme-corp" }).click();
      await page.locator("figure.chart canvas").first().waitFor();
      await page.getByRole("region", { name: "Ledger" }).getByRole("row").nth(3).waitFor();
      await page.getByLabel("Amount (credits)").fill("25");
      await page.getByRole("button", { name: "Add credits" }).click();
      await page.getByText("Add 25 credits to acme-corp?").waitFor();
      const out = resolve(values.out);
      await page.screenshot({ path: out, fullPage: true });
      process.stdout.write(`wrote ${out}\n`);
    } finally {
      await browser.close();
    }
  } finally {
    await server.close();
    await ledger.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`console-screenshot: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
