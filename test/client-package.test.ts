/**
 * The package as a user gets it (docs/api.md#typed-client): `npm pack` makes a tarball of the
 * built service and client only; installed into an empty project, it serves
 * `credit-ledger/client`, whose types make a strict TypeScript program of the README's tour
 * compile (against the package's declarations only: no Node types, browser `lib`) while a
 * misspelt path, a missing field, a mistyped field and a misread response field do not; the
 * compiled tour then runs against the installed package's own `ledger serve` and reads the
 * right balances.
 *
 * The install is offline: `npm ci --offline` of a project whose lockfile pins the tarball and,
 * for its dependencies, exactly the entries of this repository's lockfile, so it needs nothing
 * but the npm cache that `npm ci` of this repository filled. (A plain `npm install ./x.tgz` gets
 * the same tree but asks the registry for the packages' metadata.) Needs `dist/` (`npm test`
 * builds it first). Runs once, on the SQLite pass of the suite.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningProcess, spawnListening } from "./processes.ts";

const run = promisify(execFile);
const ROOT = new URL("..", import.meta.url).pathname;
const TSC = join(ROOT, "node_modules/.bin/tsc");
const API_KEY = "ldg_package_test_key_0123456789abcdef";

/** The README's tour through the client, as a user's strict program writes it. */
const TOUR = `declare const process: { argv: string[] };
import { createLedgerClient } from "credit-ledger/client";

const [baseUrl = "", apiKey = ""] = process.argv.slice(2);
const ledger = createLedgerClient({ baseUrl, apiKey });

const created = await ledger.POST("/v1/accounts/create", {
  body: { externalId: "customer-42", name: "Ada Lovelace", email: "ada@example.com" },
});
if (created.error) throw new Error(created.error.error.message);
await ledger.POST("/v1/accounts/credits/add", {
  body: { accountId: "customer-42", amount: 25.5, paymentMethod: "card" },
  headers: { "Idempotency-Key": "order-1001" },
});
await ledger.POST("/v1/project/update", { body: { creditsPerUsd: 100 } });
const { data: estimate } = await ledger.POST("/v1/models/calculate", {
  body: { modelId: "claude-sonnet-4-5", inputTokens: 9500, outputTokens: 3100 },
});
const amount = estimate?.estimatedCostCredits;
if (amount == null) throw new Error("no credit price");
const { data: hold, error } = await ledger.POST("/v1/reservations/create", {
  body: { accountId: "customer-42", amount, operation: "chat.completion" },
  headers: { "Idempotency-Key": "job-7-hold" },
});
if (error) throw new Error(error.error.code);
const { data: confirmed } = await ledger.POST("/v1/reservations/confirm", {
  body: {
    reservationId: hold.reservation.id,
    usage: { modelId: "claude-sonnet-4-5", inputTokens: 9500, outputTokens: 3100, cachedTokens: 2000 },
  },
});
// A confirm with usage always answers creditsCharged: narrowed, its type says so.
if (!confirmed || !("creditsCharged" in confirmed)) throw new Error("no creditsCharged");
const { data: charged } = await ledger.POST("/v1/usage/record", {
  body: {
    accountId: "customer-42",
    modelId: "claude-sonnet-4-5",
    inputTokens: 1000,
    outputTokens: 200,
    deduct: true,
  },
});
const { data: entries } = await ledger.GET("/v1/transactions", {
  params: { query: { accountId: "customer-42", include: "usage" } },
});
const { data: balance } = await ledger.GET("/v1/accounts/balance", {
  params: { query: { externalId: "customer-42" } },
});
console.log(
  JSON.stringify({
    estimate: estimate?.estimatedCostUsd,
    estimateCredits: amount,
    confirmed: confirmed.balance,
    creditsCharged: confirmed.creditsCharged,
    charged: charged?.creditsCharged,
    entries: entries?.items.map((i) => [i.type, i.amount, i.balanceAfter, i.usage?.length]),
    balance,
  }),
);
`;

/** Mistakes a strict compile must refuse, one per line marked `// refused`. */
const MISTAKES = `import { createLedgerClient } from "credit-ledger/client";

const ledger = createLedgerClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k" });
await ledger.POST("/v1/accounts/credits/deduc", { body: { accountId: "a", amount: 1 } }); // refused
await ledger.POST("/v1/accounts/credits/deduct", { body: { accountId: "a" } }); // refused
await ledger.POST("/v1/accounts/credits/add", { body: { accountId: "a", amount: "1" } }); // refused
const { data } = await ledger.GET("/v1/accounts/balance", { params: { query: { accountId: "a" } } });
console.log(data?.availableCredits); // refused
console.log(data?.available);
`;

/** The consumer's lockfile: the tarball, and this repository's entries of every other package. */
function consumerLock(tarball: string, integrity: string) {
  const repo = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
    packages: Record<string, { dev?: boolean }>;
  };
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    version: string;
    license: string;
    dependencies: Record<string, string>;
    bin: Record<string, string>;
    engines: Record<string, string>;
  };
  const packages: Record<string, unknown> = {
    "": { name: "consumer", dependencies: { "credit-ledger": `file:${tarball}` } },
    "node_modules/credit-ledger": {
      version: pkg.version,
      resolved: `file:${tarball}`,
      integrity,
      license: pkg.license,
      dependencies: pkg.dependencies,
      bin: pkg.bin,
      engines: pkg.engines,
    },
  };
  for (const [path, entry] of Object.entries(repo.packages)) {
    if (path.startsWith("node_modules/") && !entry.dev) packages[path] = entry;
  }
  return { name: "consumer", lockfileVersion: 3, requires: true, packages };
}

describe.runIf(process.env.LEDGER_TEST_ENGINE === "sqlite")("the npm package", () => {
  let dir: string;
  let project: string;
  let tarball: string;
  let server: RunningProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-package-"));
    const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", dir], {
      cwd: ROOT,
    });
    tarball = stdout.trim().split("\n").at(-1) ?? "";
  }, 60_000);

  // An installed project's node_modules (up to hundreds of MB) can take over 30 s to remove on a
  // busy disk.
  afterAll(async () => {
    server?.child.kill("SIGTERM");
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("packs the built service and client, and nothing else", async () => {
    const { stdout } = await run("tar", ["-tzf", join(dir, tarball)]);
    const files = stdout.split("\n").filter(Boolean);
    for (const file of [
      "package/package.json",
      "package/dist/src/client/index.js",
      "package/dist/src/client/index.d.ts",
      "package/dist/src/client/openapi.d.ts",
      "package/dist/src/cli/index.js",
      "package/sql/0001_init.sql",
      "package/data/models.json",
      "package/dist/console/app.js",
      "package/dist/console/app.css",
    ]) {
      expect(files).toContain(file);
    }
    const outside = files.filter(
      (f) =>
        !/^package\/(dist\/src\/|dist\/console\/app\.(js|css)$|sql\/|data\/models\.json$|docs\/|README\.md$|package\.json$)/.test(
          f,
        ),
    );
    expect(outside).toEqual([]);
    expect(files.filter((f) => /node_modules|\.ts$/.test(f) && !f.endsWith(".d.ts"))).toEqual([]);
  });

  it("installs offline into an empty project and serves credit-ledger/client there", async () => {
    project = join(dir, "consumer");
    mkdirSync(project);
    const bytes = readFileSync(join(dir, tarball));
    writeFileSync(join(project, tarball), bytes);
    const integrity = `sha512-${createHash("sha512").update(bytes).digest("base64")}`;
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({
        name: "consumer",
        private: true,
        type: "module",
        dependencies: { "credit-ledger": `file:${tarball}` },
        // As this repository installs it (a dependency's overrides do not reach its users).
        overrides: { "@libsql/kysely-libsql": { "@libsql/client": "0.18.0" } },
      }),
    );
    writeFileSync(
      join(project, "package-lock.json"),
      JSON.stringify(consumerLock(tarball, integrity)),
    );
    await run("npm", ["ci", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], {
      cwd: project,
    });
    const { stdout } = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'const c = await import("credit-ledger/client"); console.log(Object.keys(c).sort().join(","))',
      ],
      { cwd: project },
    );
    expect(stdout.trim().split(",")).toEqual(
      expect.arrayContaining(["createLedgerClient", "verifyWebhook", "LosslessNumber"]),
    );
  }, 120_000);

  it("compiles a strict program of the tour, refuses the mistakes, and runs the tour", async () => {
    writeFileSync(join(project, "tour.ts"), TOUR);
    writeFileSync(join(project, "mistakes.ts"), MISTAKES);
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          lib: ["ES2022", "DOM"],
          types: [],
          skipLibCheck: false,
          outDir: "out",
        },
        files: ["tour.ts", "mistakes.ts"],
      }),
    );
    const compiled = await run(TSC, ["-p", ".", "--pretty", "false"], { cwd: project }).then(
      () => ({ code: 0, stdout: "" }),
      (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
    );
    // tsc's exit code 2: errors, the output still written.
    expect(compiled.code).toBe(2);
    const errorLines = [...compiled.stdout.matchAll(/^([\w.]+)\((\d+),\d+\): error TS\d+/gm)].map(
      (m) => `${m[1]}:${m[2]}`,
    );
    const refused = MISTAKES.split("\n").flatMap((line, i) =>
      line.endsWith("// refused") ? [`mistakes.ts:${i + 1}`] : [],
    );
    expect(refused).toHaveLength(4);
    expect([...new Set(errorLines)]).toEqual(refused);
    expect(compiled.stdout).toMatch(/deduc"' is not assignable/);
    expect(compiled.stdout).toMatch(/Property 'amount' is missing/);
    expect(compiled.stdout).toMatch(/'availableCredits' does not exist/);

    const cli = join(project, "node_modules/credit-ledger/dist/src/cli/index.js");
    server = await spawnListening(process.execPath, [cli, "serve"], {
      env: {
        PATH: process.env.PATH,
        PORT: "0",
        HOST: "127.0.0.1",
        DATABASE_URL: `file:${join(dir, "ledger.db")}`,
        LEDGER_BOOTSTRAP_API_KEY: API_KEY,
      },
      cwd: project,
    });
    const tour = await run(process.execPath, ["out/tour.js", server.base, API_KEY], {
      cwd: project,
    });
    expect(JSON.parse(tour.stdout)).toEqual({
      estimate: 0.075,
      estimateCredits: 7.5,
      confirmed: 18.54,
      creditsCharged: 6.96,
      charged: 0.6,
      entries: [
        ["debit", 0.6, 17.94, 1],
        ["debit", 6.96, 18.54, 1],
        ["credit", 25.5, 25.5, 0],
      ],
      balance: {
        accountId: expect.stringMatching(/^acc_/),
        externalId: "customer-42",
        balance: 17.94,
        reserved: 0,
        available: 17.94,
        fundedBy: expect.stringMatching(/^acc_/),
      },
    });
  }, 60_000);
});
