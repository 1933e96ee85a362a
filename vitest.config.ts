import { defineConfig } from "vitest/config";

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
