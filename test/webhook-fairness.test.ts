/**
 * Fair delivery (docs/design.md#webhook-delivery): a slow or dead endpoint delays only its own
 * deliveries. With 25 endpoints of two projects that never answer (more than the worker's
 * slots) and one healthy endpoint, every delivery to the healthy one is attempted within 2 s of
 * being due, measured for real, while the hanging ones run into their timeout and are retried.
 * The timeout is shortened to 3 s so that the hanging endpoints time out and come back several
 * times during the test. All receivers are on 127.0.0.1.
 */
import { afterEach, beforeEach, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import type { DeliveryWorker } from "../src/webhooks/delivery.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { type Receiver, startReceiver, startWorker } from "./webhooks-receiver.ts";

let t: TestLedger;
let receiver: Receiver;
let worker: DeliveryWorker | undefined;

beforeEach(async () => {
  t = await makeLedger();
  receiver = await startReceiver();
});

afterEach(async () => {
  await worker?.stop();
  await receiver.close();
  await t.close();
});

/** Creates an endpoint of the project of `key` at `path`. @returns its id */
async function hook(key: string, path: string): Promise<string> {
  const { webhook } = await t.call(webhookRoutes.create, {
    body: { url: receiver.url(path), events: ["balance.low"] },
    key,
  });
  receiver.setSecret(path, webhook.secret);
  return webhook.id;
}

/** One balance.low event in the project of `key`. */
async function crossing(key: string, externalId: string) {
  await t.call(accountRoutes.create, { body: { externalId, lowBalanceThreshold: 1 }, key });
  await t.call(ledgerRoutes.add, { body: { accountId: externalId, amount: 2 }, key });
  await t.call(ledgerRoutes.deduct, { body: { accountId: externalId, amount: 1.5 }, key });
}

it("attempts a healthy endpoint's deliveries within 2 s while 25 endpoints of two projects hang", async () => {
  const other = await t.newProject("other");
  receiver.answer = (path) => (path.startsWith("/hang") ? "hang" : 200);
  const hanging: string[] = [];
  for (let i = 0; i < 25; i++) {
    const path = `/hang-${i}`;
    hanging.push(path);
    await hook(i < 13 ? t.key : other.key, path);
  }
  const healthy = await hook(t.key, "/healthy");
  const stuck = await t.call(webhookRoutes.list, { query: { limit: 1 } });
  worker = startWorker(t, {
    concurrency: 8,
    timeoutSeconds: 3,
    retrySeconds: [0.5, 0.5, 0.5, 0.5],
  });

  // Events in both projects, 0.6 s apart, for 9 s: the first meets 26 endpoints never tried,
  // the later ones endpoints that hang, time out after 3 s and are retried.
  const rounds = 15;
  const hangingNow = () => hanging.reduce((n, p) => n + (receiver.inFlightPerPath.get(p) ?? 0), 0);
  let mostHanging = 0;
  for (let i = 0; i < rounds; i++) {
    await crossing(t.key, `a-${i}`);
    await crossing(other.key, `b-${i}`);
    await new Promise((r) => setTimeout(r, 600));
    mostHanging = Math.max(mostHanging, hangingNow());
  }
  const mine = () => receiver.delivered.filter((r) => r.path === "/healthy");
  await receiver.waitFor(() => mine().length === rounds, 5000, "every healthy delivery");

  // Each delivery is due when its event is written (createdAt) and was attempted within 2 s.
  const lateness = mine().map((r) => r.arrivedAtMs - Date.parse(r.event.createdAt));
  process.stdout.write(
    `healthy endpoint: attempted ${Math.min(...lateness)}–${Math.max(...lateness)} ms after due, 25 endpoints hanging\n`,
  );
  expect(
    lateness.every((ms) => ms >= 0 && ms < 2000),
    String(lateness),
  ).toBe(true);
  expect(receiver.invalid).toEqual([]);

  // The hanging endpoints were attempted, more at once than the worker has slots, one attempt
  // each at a time, and timed out.
  expect(mostHanging).toBeGreaterThan(8);
  const attempted = hanging.filter((p) => (receiver.attempts.get(p) ?? 0) >= 2);
  expect(attempted).toEqual(hanging);
  expect(Math.max(...hanging.map((p) => receiver.maxInFlightPerPath.get(p) ?? 0))).toBe(1);
  const firstHang = stuck.webhooks[0]?.id ?? "";
  const log = await t.call(webhookRoutes.deliveries, { query: { webhookId: firstHang } });
  expect(log.deliveries.some((d) => d.lastError === "timeout after 3000 ms")).toBe(true);
  const delivered = await t.call(webhookRoutes.deliveries, {
    query: { webhookId: healthy, limit: 100 },
  });
  expect(delivered.deliveries.map((d) => d.status)).toEqual(Array(rounds).fill("delivered"));
  expect(await t.verify()).toEqual([]);
}, 60_000);
