/**
 * The client as its own package (`npm run pack:client`, scripts/pack-client.ts;
 * docs/api.md#getting-the-client; contract section 15): the tarball `credit-ledger-client-<version>.tgz`
 * holds the compiled client and its declarations only; `npm install` of it into an empty
 * project (from the npm registry, or the npm cache when it already holds the packages) brings
 * the client's own dependencies and nothing of the server; the client tour of docs/client.md,
 * taken from the page as it stands, compiles there under `strict` (browser `lib`, no Node types, the
 * package's declarations checked too) while a misspelt path and a misread response field do
 * not; and the compiled tour runs against a live service on loopback and prints the right,
 * exact figures.
 *
 * Runs `dist/scripts/pack-client.js`, the script `npm run pack:client` runs after compiling the
 * scripts, and `dist/src/cli/index.js serve`: needs `dist/` (`npm test` builds it first). Runs
 * once, on the SQLite pass of the suite.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningProcess, spawnServer } from "./processes.ts";

const run = promisify(execFile);
const ROOT = new URL("..", import.meta.url).pathname;
const TSC = join(ROOT, "node_modules/.bin/tsc");
const API_KEY = "ldg_client_pack_test_key_0123456789ab";

/** What the client needs, and what they need in turn: the whole installed tree. */
const CLIENT_TREE = [
  "@stablelib/base64",
  "credit-ledger-client",
  "fast-sha256",
  "lossless-json",
  "openapi-fetch",
  "openapi-typescript-helpers",
  "standardwebhooks",
];

/** Packages of the server that must never reach an application through the client. */
const SERVER_PACKAGE =
  /^(pg|pg-.*|libsql|@libsql\/.*|@neon-rs\/.*|@scalar\/.*|hono|@hono\/.*|kysely|zod|croner|pino|prom-client|commander|ulid|uplot|credit-ledger)$/;

/** The client's tour of docs/client.md: the `ts` block that imports `credit-ledger-client`. */
function pageTour(): string {
  const page = readFileSync(join(ROOT, "docs/client.md"), "utf8");
  const blocks = [...page.matchAll(/```ts[^\n]*\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
  const tour = blocks.find((b) => b.includes("createLedgerClient") && b.includes("/v1/usage"));
  if (!tour) throw new Error("docs/client.md has no client tour");
  return tour;
}

/** Mistakes a strict compile must refuse, one per line marked `// refused`. */
const MISTAKES = `import { compareAmounts, createLedgerClient } from "credit-ledger-client";

const ledger = createLedgerClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k" });
await ledger.POST("/v1/accounts/credits/deduc", { body: { accountId: "a", amount: 1 } }); // refused
const { data } = await ledger.GET("/v1/accounts/balance", { params: { query: { accountId: "a" } } });
console.log(data?.availableCredits); // refused
if (data && data.available < 5) console.log("low"); // refused
if (data && compareAmounts(data.available, 5) < 0) console.log("low");
`;

describe.runIf(process.env.LEDGER_TEST_ENGINE === "sqlite")("the client's own package", () => {
  let dir: string;
  let project: string;
  let tarball: string;
  let server: RunningProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-client-pack-"));
    const { stdout } = await run(
      process.execPath,
      [join(ROOT, "dist/scripts/pack-client.js"), "--pack-destination", dir],
      { cwd: ROOT },
    );
    tarball = stdout.trim().split("\n").at(-1) ?? "";
  }, 120_000);

  afterAll(async () => {
    server?.child.kill("SIGTERM");
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it("packs the compiled client and its declarations, pinned to the root's versions", async () => {
    const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      version: string;
      dependencies: Record<string, string>;
    };
    expect(basename(tarball)).toBe(`credit-ledger-client-${root.version}.tgz`);
    const { stdout } = await run("tar", ["-tzf", tarball]);
    const files = stdout.split("\n").filter(Boolean).sort();
    expect(files).toEqual(
      ["README.md", "package.json"]
        .concat(
          ["amounts", "client", "exact-json", "index", "openapi", "webhooks"].flatMap((f) => [
            `dist/${f}.d.ts`,
            `dist/${f}.js`,
          ]),
        )
        .map((f) => `package/${f}`)
        .sort(),
    );
    const manifest = JSON.parse(
      (await run("tar", ["-xzOf", tarball, "package/package.json"])).stdout,
    ) as { name: string; version: string; dependencies: Record<string, string> };
    expect(manifest.name).toBe("credit-ledger-client");
    expect(manifest.version).toBe(root.version);
    expect(manifest.dependencies).toEqual({
      "lossless-json": root.dependencies["lossless-json"],
      "openapi-fetch": root.dependencies["openapi-fetch"],
      standardwebhooks: root.dependencies.standardwebhooks,
    });
  });

  it("installs into an empty project with the client's dependencies only", async () => {
    project = join(dir, "app");
    mkdirSync(project);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "app", private: true, type: "module" }),
    );
    await run(
      "npm",
      ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", tarball],
      { cwd: project },
    );
    const lock = JSON.parse(
      readFileSync(join(project, "node_modules/.package-lock.json"), "utf8"),
    ) as { packages: Record<string, { version: string }> };
    const installed = Object.keys(lock.packages).map((path) =>
      path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length),
    );
    expect(installed.filter((name) => SERVER_PACKAGE.test(name))).toEqual([]);
    expect([...new Set(installed)].sort()).toEqual(CLIENT_TREE);
    const { stdout } = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'const c = await import("credit-ledger-client"); console.log(Object.keys(c).sort().join(","))',
      ],
      { cwd: project },
    );
    expect(stdout.trim().split(",")).toEqual(
      expect.arrayContaining([
        "createLedgerClient",
        "verifyWebhook",
        "toMicros",
        "fromMicros",
        "compareAmounts",
        "addAmounts",
        "LosslessNumber",
      ]),
    );
  }, 180_000);

  it("compiles the tour of docs/client.md under strict, refuses the mistakes, and runs it", async () => {
    const tour = `declare const process: { env: Record<string, string | undefined> };\n${pageTour()}`;
    writeFileSync(join(project, "tour.ts"), tour);
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
    expect(refused).toHaveLength(3);
    expect([...new Set(errorLines)]).toEqual(refused);
    expect(compiled.stdout).toMatch(/deduc"' is not assignable/);
    expect(compiled.stdout).toMatch(/'availableCredits' does not exist/);
    expect(compiled.stdout).toMatch(/Operator '<' cannot be applied/);

    server = await spawnServer({
      PATH: process.env.PATH,
      DATABASE_URL: `file:${join(dir, "ledger.db")}`,
      LEDGER_BOOTSTRAP_API_KEY: API_KEY,
    });
    const ran = await run(process.execPath, ["out/tour.js"], {
      cwd: project,
      env: { PATH: process.env.PATH, API: server.base, KEY: API_KEY },
    });
    expect(ran.stdout.trim().split("\n")).toEqual([
      "estimate 9.6",
      "charged 6.96",
      "charged 0.6 balance 2.44",
      "debit 0.6 → 2.44",
      "debit 6.96 → 3.04",
      "credit 10 → 10",
      "2.44 2.44",
      "spent 7.56",
      "micro-credits 2440000n",
    ]);
  }, 120_000);
});
