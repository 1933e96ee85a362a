/**
 * Migration 0007 on a database built up to 0006 (docs/design.md#webhook-retention): existing
 * deliveries get the end time retention counts from, never earlier than they ended (a delivered
 * one its delivery time; a failed one its endpoint's deletion, else the migration's time), and
 * existing endpoints start unclaimed, with no answer on record.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/db/client.ts";
import { migrateToLatest, migrationsDirOf, readMigrationFiles } from "../src/db/migrator.ts";
import { freshDatabase, TEST_ENGINE } from "./pg-harness.ts";

const T0 = Date.parse("2026-03-01T00:00:00Z");
const DAY = 86_400_000;

describe("migration 0007", () => {
  it("backfills when existing deliveries ended, never earlier than they did", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ledger-0007-"));
    const database = await freshDatabase(dir);
    const db = await openDatabase({
      url: database.url,
      authToken: database.env.DATABASE_AUTH_TOKEN,
      driver: "auto",
      synchronous: "NORMAL",
    });
    try {
      const files = await readMigrationFiles(migrationsDirOf(TEST_ENGINE));
      const before = Object.fromEntries(Object.entries(files).filter(([name]) => name < "0007"));
      await migrateToLatest(db.write, before);
      const w = db.write;
      await w
        .insertInto("projects")
        .values({ id: "prj_A", name: "a", created_at_ms: T0 })
        .execute();
      const endpoint = (id: string, deletedAtMs: number | null) => ({
        id,
        project_id: "prj_A",
        url: "https://hooks.example.com/x",
        events: '["balance.low"]',
        description: "",
        secret: "whsec_x",
        created_at_ms: T0,
        deleted_at_ms: deletedAtMs,
      });
      await w
        .insertInto("webhooks")
        .values([endpoint("wh_LIVE", null), endpoint("wh_GONE", T0 + 5 * DAY)])
        .execute();
      for (const id of ["evt_1", "evt_2", "evt_3"]) {
        await w
          .insertInto("webhook_events")
          .values({
            id,
            project_id: "prj_A",
            type: "balance.low",
            payload: "{}",
            created_at_ms: T0,
          })
          .execute();
      }
      const delivery = (
        id: string,
        eventId: string,
        webhookId: string,
        status: "pending" | "delivered" | "failed",
      ) => ({
        id,
        project_id: "prj_A",
        webhook_id: webhookId,
        event_id: eventId,
        event_type: "balance.low",
        status,
        attempts: 1,
        last_status_code: null,
        last_error: null,
        next_attempt_at_ms: status === "pending" ? T0 + DAY : null,
        locked_until_ms: null,
        lease_token: null,
        created_at_ms: T0,
        delivered_at_ms: status === "delivered" ? T0 + 2 * DAY : null,
      });
      await w
        .insertInto("webhook_deliveries")
        .values([
          delivery("whd_DELIVERED", "evt_1", "wh_LIVE", "delivered"),
          delivery("whd_FAILED_GONE", "evt_1", "wh_GONE", "failed"),
          delivery("whd_FAILED_LIVE", "evt_2", "wh_LIVE", "failed"),
          delivery("whd_PENDING", "evt_3", "wh_LIVE", "pending"),
        ])
        .execute();

      const startedMs = Date.now();
      expect(await migrateToLatest(db.write, files)).toContain("0007_webhook_fairness_retention");
      const endedMs = Date.now();
      const rows = await db.read
        .selectFrom("webhook_deliveries")
        .select(["id", "ended_at_ms"])
        .orderBy("id")
        .execute();
      const ended = Object.fromEntries(rows.map((r) => [r.id, r.ended_at_ms]));
      expect(ended.whd_DELIVERED).toBe(T0 + 2 * DAY);
      expect(ended.whd_FAILED_GONE).toBe(T0 + 5 * DAY);
      expect(ended.whd_PENDING).toBeNull();
      // The failed delivery of a live endpoint: its end was not kept, so the migration's time.
      expect(ended.whd_FAILED_LIVE).toBeGreaterThanOrEqual(startedMs - 1000);
      expect(ended.whd_FAILED_LIVE).toBeLessThanOrEqual(endedMs + 1000);
      const hooks = await db.read
        .selectFrom("webhooks")
        .select(["busy_until_ms", "answered_at_ms", "stalled_at_ms"])
        .execute();
      expect(hooks).toEqual([
        { busy_until_ms: null, answered_at_ms: null, stalled_at_ms: null },
        { busy_until_ms: null, answered_at_ms: null, stalled_at_ms: null },
      ]);
    } finally {
      await db.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
