/**
 * The service's OpenAPI document built in-process, without a database: `createApp` over
 * dependencies that refuse every query (Kysely's dummy driver), which is enough, since building
 * the document runs no handler. Used by `npm run client:types` (scripts/client-types.ts).
 */
import {
  DummyDriver,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from "kysely";
import { createApp, openApiDocument } from "../../src/app.ts";
import type { DB } from "../../src/db/schema.ts";
import { WriteHealth } from "../../src/db/write-health.ts";
import type { WriteQueue } from "../../src/db/write-path.ts";
import { silentLogger } from "../../src/logger.ts";
import { createMetrics } from "../../src/metrics.ts";

/** The document `GET /openapi.json` serves, as a plain JSON value. */
export function documentWithoutDatabase(): unknown {
  const db = new Kysely<DB>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (k) => new SqliteIntrospector(k),
      createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  });
  const refuse = () => Promise.reject(new Error("building the document runs no write"));
  const queue: WriteQueue = {
    run: refuse,
    runWrite: refuse,
    unitOf: () => refuse,
    idle: async () => {},
    depth: 0,
    health: new WriteHealth(refuse),
  };
  const app = createApp({
    db: { write: db, read: db, engine: "sqlite", driver: "native", close: () => db.destroy() },
    queue,
    config: {
      RESERVATION_TTL_SECONDS: 900,
      BODY_LIMIT_BYTES: 65_536,
      WEBHOOK_ALLOW_PRIVATE: false,
      WEBHOOK_MAX_PER_PROJECT: 50,
      STRIPE_API_URL: "https://api.stripe.com",
    },
    clock: Date.now,
    logger: silentLogger,
    metrics: createMetrics({ processMetrics: false }),
  });
  // Through JSON, as a client reads it: zod-to-openapi's objects may hold `undefined` members.
  return JSON.parse(JSON.stringify(openApiDocument(app)));
}
