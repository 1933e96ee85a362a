import { defineConfig } from "vitest/config";

/**
 * The whole suite runs once per engine: on SQLite always, then on PostgreSQL when
 * LEDGER_TEST_PG_URL names a role that may create databases (`eval "$(scripts/pg-cluster.sh
 * start)"` sets it). test/pg-harness.ts reads LEDGER_TEST_ENGINE. The two runs follow each other
 * (groupOrder) rather than share the machine, since some tests time real processes.
 */
const engines = process.env.LEDGER_TEST_PG_URL ? ["sqlite", "postgres"] : ["sqlite"];

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
