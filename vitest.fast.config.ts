import { readdirSync, readFileSync } from "node:fs";
import { configDefaults, defineConfig, mergeConfig } from "vitest/config";
import suite from "./vitest.config.ts";

/**
 * `npm run test:fast`: the suite, on the engines vitest.config.ts chooses, without the tests that
 * start processes (the compiled `ledger` command, servers in child processes, browsers, `mount`),
 * which need `npm run build` and most of the suite's time, and without two files slow by nature
 * (`slowByNature` below); `npm test` runs them all.
 *
 * The list is derived, not kept by hand: a test file starts processes when it, or a file of this
 * repository that it imports directly (test/processes.ts, scripts/lib/hrana/process.ts, …),
 * imports `node:child_process` or `playwright-core`. One level only: test/pg-harness.ts, which
 * every test reaches, starts a process only for the remote libSQL run.
 */
const STARTS_PROCESSES = /from "(node:child_process|playwright-core)"/;
const RELATIVE_IMPORT = /from "(\.\.?\/[^"]+\.ts)"/g;

const testDir = new URL("./test/", import.meta.url);
const read = (url: URL) => readFileSync(url, "utf8");

/** True when test file `name` or a file it imports directly starts processes. */
function startsProcesses(name: string): boolean {
  const url = new URL(name, testDir);
  const text = read(url);
  if (STARTS_PROCESSES.test(text)) return true;
  return [...text.matchAll(RELATIVE_IMPORT)].some(([, path = ""]) =>
    STARTS_PROCESSES.test(read(new URL(path, url))),
  );
}

const spawning = readdirSync(testDir).filter(
  (name) => name.endsWith(".test.ts") && startsProcesses(name),
);

/**
 * Files slow by nature, left to `npm test`: their time is what they test, not waste.
 * - grants-model.test.ts: six seeded runs of 200 random steps against a reference model, each
 *   step several requests and every fifth a `ledger verify` (about a third of the fast set's
 *   test time); fewer steps would test less.
 * - webhook-fairness.test.ts: 25 endpoints that never answer run into their real 3 s timeout
 *   several times while a healthy one is timed for real (about 10 s of waiting).
 */
const slowByNature = ["grants-model.test.ts", "webhook-fairness.test.ts"];

export default mergeConfig(
  suite,
  defineConfig({
    test: {
      // test/ledger-model.test.ts runs its small size here (a few seeds of 100 steps).
      env: { LEDGER_MODEL_SIZE: "fast" },
      exclude: [
        ...configDefaults.exclude,
        ...[...spawning, ...slowByNature].map((name) => `test/${name}`),
      ],
    },
  }),
);
