/**
 * The typed client runs on Bun, Deno and in a browser (docs/api.md#typed-client), with no
 * Node-only API in its module graph: esbuild bundles src/client for the browser platform (where
 * a `node:` import cannot resolve), and the bundle then calls a listening server and verifies a
 * signed webhook in Bun, in Deno (network to 127.0.0.1 only, nothing else allowed) and in
 * headless Chromium (Debian's, through playwright-core; skipped only when it is absent). Node
 * runs the client in every other test of the suite.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeLedger, type TestLedger } from "./harness.ts";

const run = promisify(execFile);
const CHROMIUM = "/usr/bin/chromium";
const BIN = new URL("../node_modules/.bin/", import.meta.url).pathname;
const CLIENT = new URL("../src/client/index.ts", import.meta.url).pathname;

/** What each runtime is given. */
interface Input {
  base: string;
  key: string;
  externalId: string;
  secret: string;
  payload: string;
  headers: Record<string, string>;
}

/**
 * The program each runtime runs: 8,600,000,000.000001 credits added through the client and
 * read back, a signed event verified and narrowed, and the same event tampered with refused.
 */
const PROGRAM = `
import { createLedgerClient, isLosslessNumber, verifyWebhook } from ${JSON.stringify(CLIENT)};

export async function run(input) {
  const client = createLedgerClient({ baseUrl: input.base, apiKey: input.key });
  const accountId = input.externalId;
  await client.POST("/v1/accounts/create", { body: { externalId: accountId } });
  for (let i = 0; i < 8; i++) {
    await client.POST("/v1/accounts/credits/add", { body: { accountId, amount: 1e9 } });
  }
  await client.POST("/v1/accounts/credits/add", { body: { accountId, amount: 600000000.000001 } });
  const { data } = await client.GET("/v1/accounts/balance", { params: { query: { accountId } } });
  const event = verifyWebhook(input.payload, input.headers, input.secret);
  let tampered = "accepted";
  try {
    verifyWebhook(input.payload.replace('"threshold":5', '"threshold":50'), input.headers, input.secret);
  } catch (err) {
    tampered = err.name;
  }
  return {
    balance: String(data.balance),
    lossless: isLosslessNumber(data.balance),
    event: event.type === "balance.low" ? ["balance.low", event.data.threshold] : [event.type],
    tampered,
    node: typeof process !== "undefined" && typeof process.versions?.node === "string",
  };
}
`;

/** What every runtime must answer (`node` aside). */
const EXPECTED = {
  balance: "8600000000.000001",
  lossless: true,
  event: ["balance.low", 5],
  tampered: "WebhookVerificationError",
};

/** A signed `balance.low` delivery, as the service would send it. */
function signedEvent(): Pick<Input, "secret" | "payload" | "headers"> {
  const secret = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`;
  const id = "evt_01M7YKQ49ZK3W7P2N6Y5D8E1RX";
  const payload = JSON.stringify({
    id,
    type: "balance.low",
    createdAt: new Date().toISOString(),
    data: {
      accountId: "acc_1",
      externalId: "x",
      balance: 4,
      reserved: 0,
      available: 4,
      threshold: 5,
      transactionId: "txn_1",
    },
  });
  const now = new Date();
  const headers = {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": new Webhook(secret).sign(id, now, payload),
  };
  return { secret, payload, headers };
}

/**
 * Runs `command` with `args`, without blocking this process (which serves the ledger).
 * @returns its last line of standard output, parsed as JSON
 */
async function runJson(command: string, args: string[], cwd: string): Promise<unknown> {
  const { stdout } = await run(command, args, { cwd, encoding: "utf8", timeout: 30_000 });
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "");
}

describe("the client on other runtimes", () => {
  let t: TestLedger;
  let base: string;
  let dir: string;
  const input = (externalId: string): Input => ({ base, key: t.key, externalId, ...signedEvent() });

  beforeAll(async () => {
    t = await makeLedger();
    base = await t.listen();
    dir = mkdtempSync(join(tmpdir(), "ledger-client-runtimes-"));
    writeFileSync(join(dir, "program.mjs"), PROGRAM);
    // For the browser platform: a `node:` import, or a package's Node-only entry, fails here.
    for (const [format, outfile] of [
      ["esm", "client.mjs"],
      ["iife", "client.js"],
    ] as const) {
      await build({
        entryPoints: [join(dir, "program.mjs")],
        bundle: true,
        platform: "browser",
        format,
        globalName: format === "iife" ? "ledgerProgram" : undefined,
        outfile: join(dir, outfile),
        logLevel: "silent",
      });
    }
    writeFileSync(
      join(dir, "main.mjs"),
      'import { run } from "./client.mjs";\n' +
        "const input = JSON.parse(globalThis.Deno ? Deno.args[0] : process.argv[2]);\n" +
        "console.log(JSON.stringify(await run(input)));\n",
    );
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("runs on Bun", async () => {
    const out = await runJson(`${BIN}bun`, ["main.mjs", JSON.stringify(input("bun"))], dir);
    expect(out).toMatchObject(EXPECTED);
  });

  it("runs on Deno with no permission but the network to 127.0.0.1", async () => {
    const args = ["run", "--quiet", "--no-prompt", "--no-config", "--no-lock"];
    const allow = `--allow-net=${new URL(base).host}`;
    const out = await runJson(
      `${BIN}deno`,
      [...args, allow, "main.mjs", JSON.stringify(input("deno"))],
      dir,
    );
    // Deno has a `process` global of its own (Node compatibility), so `node` is not asserted.
    expect(out).toMatchObject(EXPECTED);
  });

  it.skipIf(!existsSync(CHROMIUM))(
    "runs in headless Chromium, where there is no Node API at all",
    async () => {
      const profile = mkdtempSync(join(tmpdir(), "ledger-chromium-"));
      const browser = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
      });
      try {
        const page = await browser.newPage();
        const errors: string[] = [];
        page.on("pageerror", (err) => errors.push(err.message));
        // A page of the service itself, so that the client's requests are same-origin.
        await page.goto(`${base}/health`);
        await page.addScriptTag({ path: join(dir, "client.js") });
        const out = await page.evaluate(
          (given) =>
            (
              globalThis as unknown as {
                ledgerProgram: { run: (i: Input) => Promise<unknown> };
              }
            ).ledgerProgram.run(given),
          input("chromium"),
        );
        expect(out).toEqual({ ...EXPECTED, node: false });
        expect(errors).toEqual([]);
      } finally {
        await browser.close();
        rmSync(profile, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
