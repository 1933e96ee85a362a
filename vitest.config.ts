import { randomBytes } from "node:crypto";
import { defineConfig } from "vitest/config";

/** Names this run's migrated templates (test/templates.ts); the workers inherit it. */
process.env.LEDGER_TEST_RUN ??= `r${randomBytes(5).toString("hex")}`;

/**
 * The whole suite runs once per engine: on the embedded SQLite file always, then on PostgreSQL
 * when LEDGER_TEST_PG_URL names a role that may create databases (`eval "$(scripts/pg-cluster.sh
 * start)"` sets it), then on remote libSQL when LEDGER_TEST_LIBSQL=1 (each ledger gets a Hrana
 * test server process over a fresh file; needs `npm run build`). test/pg-harness.ts reads
 * LEDGER_TEST_ENGINE. The runs follow each other (groupOrder) rather than share the machine,
 * since some tests time real processes.
 */
const engines = [
  "sqlite",
  ...(process.env.LEDGER_TEST_PG_URL ? ["postgres"] : []),
  ...(process.env.LEDGER_TEST_LIBSQL === "1" ? ["libsql"] : []),
];

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    globalSetup: ["test/global-setup.ts"],
    // The files a worker runs share one module graph: a graph per file (vitest's default) spent
    // about 275 s of a full run importing the service again. Each engine's files get workers of
    // their own, so an engine read at import (test/pg-harness.ts) stays right; a test file that
    // sets module state unsets it when done (test/embedded-assets.test.ts).
    isolate: false,
    projects: engines.map((engine, i) => ({
      extends: true,
      test: {
        name: engine,
        env: { LEDGER_TEST_ENGINE: engine },
        sequence: { groupOrder: i },
      },
    })),
  },
});
