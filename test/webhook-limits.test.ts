/**
 * At most WEBHOOK_MAX_PER_PROJECT active webhooks per project (docs/api.md#webhook-endpoints):
 * one more is a 409 WEBHOOK_LIMIT_REACHED, also when many creates race (the limit holds
 * exactly); a deleted endpoint frees its place; other projects are apart. `GET /v1/webhooks`
 * pages with `limit`/`offset` and `pagination`. No webhook here is ever delivered to.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import { expectError } from "./contract.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

let t: TestLedger;

beforeEach(async () => {
  t = await makeLedger({ env: { WEBHOOK_MAX_PER_PROJECT: "3" } });
});

afterEach(async () => {
  await t.close();
});

const create = (n: number, key?: string) =>
  t.call(webhookRoutes.create, {
    body: { url: `http://127.0.0.1:9/hook-${n}`, description: `#${n}` },
    ...(key ? { key } : {}),
  });

describe("the webhook limit", () => {
  it("refuses one more than WEBHOOK_MAX_PER_PROJECT, per project, until one is deleted", async () => {
    const first = await create(1);
    await create(2);
    await create(3);
    const refused = await t.fail(
      webhookRoutes.create,
      { body: { url: "http://127.0.0.1:9/hook-4" } },
      409,
      "WEBHOOK_LIMIT_REACHED",
    );
    expect(refused.error).toEqual({
      code: "WEBHOOK_LIMIT_REACHED",
      message: "A project has at most 3 active webhooks; delete one first",
      details: { limit: 3 },
    });
    expect((await t.call(webhookRoutes.list)).pagination.totalCount).toBe(3);

    const other = await t.newProject("other");
    await create(1, other.key);

    await t.call(webhookRoutes.delete, { body: { webhookId: first.webhook.id } });
    await create(4);
    await t.fail(
      webhookRoutes.create,
      { body: { url: "http://127.0.0.1:9/hook-5" } },
      409,
      "WEBHOOK_LIMIT_REACHED",
    );
  });

  it("holds exactly when twelve creates race", async () => {
    const other = await t.newProject("other");
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.api("POST", "/v1/webhooks/create", {
          body: { url: `http://127.0.0.1:9/race-${i}` },
          key: i % 2 === 0 ? t.key : other.key,
        }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(6).fill(200), ...Array(6).fill(409)]);
    for (const r of results.filter((x) => x.status === 409)) {
      expectError(r, 409, "WEBHOOK_LIMIT_REACHED");
    }
    expect((await t.call(webhookRoutes.list)).pagination.totalCount).toBe(3);
    expect((await t.call(webhookRoutes.list, { key: other.key })).pagination.totalCount).toBe(3);
  });

  it("is documented on the create route of /openapi.json", async () => {
    const doc = (await (await t.app.request("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    const conflict = doc.paths["/v1/webhooks/create"]?.post?.responses["409"];
    expect(JSON.stringify(conflict)).toContain("WEBHOOK_LIMIT_REACHED");
  });
});

describe("the webhook list", () => {
  it("pages oldest first with limit, offset and pagination, without deleted endpoints", async () => {
    const a = await create(1);
    const b = await create(2);
    const c = await create(3);
    const page = await t.call(webhookRoutes.list, { query: { limit: 2 } });
    expect(page.webhooks.map((w) => w.id)).toEqual([a.webhook.id, b.webhook.id]);
    expect(page.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3, hasMore: true });
    const rest = await t.call(webhookRoutes.list, { query: { limit: 2, offset: 2 } });
    expect(rest.webhooks.map((w) => w.id)).toEqual([c.webhook.id]);
    expect(rest.pagination).toEqual({ limit: 2, offset: 2, totalCount: 3, hasMore: false });
    expect(JSON.stringify(rest)).not.toContain("whsec_");

    await t.call(webhookRoutes.delete, { body: { webhookId: b.webhook.id } });
    const after = await t.call(webhookRoutes.list);
    expect(after.webhooks.map((w) => w.id)).toEqual([a.webhook.id, c.webhook.id]);
    expect(after.pagination).toEqual({ limit: 50, offset: 0, totalCount: 2, hasMore: false });

    const bad: Record<string, number>[] = [{ limit: 0 }, { limit: 501 }, { offset: -1 }];
    for (const query of bad) {
      await t.fail(webhookRoutes.list, { query }, 400, "VALIDATION_ERROR");
    }
  });
});
