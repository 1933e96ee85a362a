/**
 * docs/client.md, tried as new (contract section 15; issue 45): the page's shell blocks and the
 * files it asks to save, taken from the page as it stands and run in order as one shell script
 * in an empty folder, against a service started here on loopback. Nothing of the page is
 * edited: the one block that a reader fills in (`LEDGER`, `API`, `KEY`) is checked to set
 * exactly those three, and the test gives them their values instead (a copy of this
 * repository's sources, the server's address, its key). The page's `tsc` checks must print
 * nothing, and the tour must print exactly the output the page shows.
 *
 * `LEDGER` is a copy of the sources with this repository's `node_modules` linked in, so the
 * page's `npm run pack:client` (which compiles the scripts into `dist/`) never rewrites the
 * `dist/` that other tests run from. The installs go through the npm cache first
 * (`npm_config_prefer_offline`), the registry only for what the cache lacks. The server is
 * `dist/src/cli/index.js serve` (needs `npm run build`, which `npm test` runs first). Runs
 * once, on the SQLite pass of the suite.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningProcess, spawnServer } from "./processes.ts";

const run = promisify(execFile);
const ROOT = new URL("..", import.meta.url).pathname;
const PAGE = join(ROOT, "docs/client.md");
const API_KEY = "ldg_client_tour_test_key_0123456789ab";

/** What `npm run pack:client` needs of this repository: its sources and build settings. */
const SOURCES = [
  "package.json",
  "tsconfig.json",
  "tsconfig.build.json",
  "src",
  "scripts",
  "console",
  "sql",
  "data",
];

/** One fenced block of the page: its language, the file it is saved as (if any), its text. */
interface PageBlock {
  lang: string;
  title: string | undefined;
  text: string;
}

/** The fenced blocks of a Markdown page, in order (` ```ts title="tour.ts" ` gives a title). */
function pageBlocks(markdown: string): PageBlock[] {
  return [...markdown.matchAll(/^```(\w*)([^\n]*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1] ?? "",
    title: /title="([^"]+)"/.exec(m[2] ?? "")?.[1],
    text: m[3] ?? "",
  }));
}

/** The marker echoed before the shell block at `index`, to split the script's output. */
const marker = (index: number) => `@@ docs/client.md block ${index} @@`;

/**
 * The page as one shell script: each `sh` block as written, preceded by an `echo` of its
 * marker; each titled block saved under its title in the working folder (a quoted here
 * document: written as is). The settings block is left out; its variables come from the
 * environment.
 */
function pageScript(blocks: PageBlock[], settings: PageBlock): string {
  const lines: string[] = [];
  blocks.forEach((block, i) => {
    if (block === settings) return;
    if (block.lang === "sh") {
      lines.push(`echo '${marker(i)}'`, block.text);
    } else if (block.title !== undefined) {
      expect(block.text, block.title).not.toContain("\nPAGE_FILE_END\n");
      lines.push(`cat > '${block.title}' <<'PAGE_FILE_END'`, `${block.text}PAGE_FILE_END`);
    }
  });
  return lines.join("\n");
}

/** The output of each shell block of the script's stdout, by block index. */
function outputsByBlock(stdout: string, blocks: PageBlock[]): Map<number, string> {
  const outputs = new Map<number, string>();
  const indexes = blocks.flatMap((_b, i) => (stdout.includes(marker(i)) ? [i] : []));
  indexes.forEach((index, k) => {
    const start = stdout.indexOf(marker(index)) + marker(index).length + 1;
    const next = indexes[k + 1];
    const end = next === undefined ? stdout.length : stdout.indexOf(marker(next));
    outputs.set(index, stdout.slice(start, end));
  });
  return outputs;
}

// The page is the same whatever engine serves it: run once, on the embedded default.
describe.runIf(process.env.LEDGER_TEST_ENGINE === "sqlite")("docs/client.md, as written", () => {
  let dir: string;
  let server: RunningProcess | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ledger-client-tour-"));
    server = await spawnServer({
      PATH: process.env.PATH,
      DATABASE_URL: `file:${join(dir, "ledger.db")}`,
      LEDGER_BOOTSTRAP_API_KEY: API_KEY,
    });
  });

  // An installed project's node_modules (up to hundreds of MB) can take over 30 s to remove on a
  // busy disk.
  afterAll(async () => {
    server?.child.kill("SIGTERM");
    await server?.exited;
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("runs from an empty folder with no edits: strict tsc clean, and the output it shows", async () => {
    const blocks = pageBlocks(readFileSync(PAGE, "utf8"));
    // The block a reader fills in sets exactly LEDGER, API and KEY, and nothing else.
    const settings = blocks.find((b) => b.lang === "sh" && b.text.includes("/path/to/"));
    if (!settings) throw new Error("docs/client.md has no block setting LEDGER, API and KEY");
    const names = settings.text
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => /^export (\w+)=\S+\s*(#.*)?$/.exec(line)?.[1]);
    expect(names).toEqual(["LEDGER", "API", "KEY"]);
    // The page's own words: saved files, the strict check, the run and what it prints.
    expect(blocks.filter((b) => b.title).map((b) => b.title)).toEqual([
      "tsconfig.json",
      "tour.ts",
      "receiver.ts",
    ]);
    const checks = blocks.flatMap((b, i) => (b.lang === "sh" && b.text === "npx tsc\n" ? [i] : []));
    expect(checks).toHaveLength(2);
    const runAt = blocks.findIndex((b) => b.lang === "sh" && b.text === "npx tsx tour.ts\n");
    const shown = blocks[runAt + 1];
    expect(shown?.lang).toBe("text");

    const ledger = join(dir, "credit-ledger");
    for (const source of SOURCES)
      cpSync(join(ROOT, source), join(ledger, source), { recursive: true });
    symlinkSync(join(ROOT, "node_modules"), join(ledger, "node_modules"));
    const empty = join(dir, "empty");
    mkdirSync(empty);
    const script = pageScript(blocks, settings);
    const ran = await run("bash", ["-e", "-o", "pipefail", "-c", script], {
      cwd: empty,
      maxBuffer: 64 * 1024 * 1024,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        LEDGER: ledger,
        API: server?.base,
        KEY: API_KEY,
        npm_config_prefer_offline: "true",
        npm_config_audit: "false",
        npm_config_fund: "false",
        npm_config_update_notifier: "false",
      },
    }).catch((err: { stdout: string; stderr: string; message: string }) => {
      throw new Error(`${err.message}\n${err.stdout}\n${err.stderr}`);
    });

    const outputs = outputsByBlock(ran.stdout, blocks);
    for (const index of checks) expect(outputs.get(index), `block ${index}`).toBe("");
    expect(outputs.get(runAt)).toBe(shown?.text);
    // The client came from the tarball the page packed, as an ES module project.
    const app = JSON.parse(readFileSync(join(empty, "ledger-tour/package.json"), "utf8")) as {
      type: string;
      dependencies: Record<string, string>;
    };
    expect(app.type).toBe("module");
    expect(app.dependencies["credit-ledger-client"]).toMatch(
      /^file:credit-ledger-client-\d+\.\d+\.\d+\.tgz$/,
    );
  }, 600_000);
});
