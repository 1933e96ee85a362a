/**
 * Webhook targets (docs/api.md#webhook-targets): only public addresses. Creating a webhook whose
 * host is, or resolves to, a loopback, private, link-local, unspecified or other non-public
 * address is a 400 naming `body.url`; delivery checks the address it connects to, so a name that
 * later resolves to such an address is not called and the attempt fails with the reason.
 *
 * No test here sends traffic anywhere but 127.0.0.1: refusals at creation need no traffic
 * (literal addresses need no DNS; names go to a stub resolver), and refusals at delivery are
 * shown with loopback receivers only, which must see no request.
 */
import { afterEach, describe, expect, it } from "vitest";
import { accountRoutes } from "../src/accounts/routes.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import type { ResolveHost } from "../src/resolve-host.ts";
import type { DeliveryWorker } from "../src/webhooks/delivery.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import { nonPublicKind } from "../src/webhooks/targets.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import { type Receiver, startReceiver, startWorker } from "./webhooks-receiver.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A stub resolver: `names` maps a host to its addresses (a missing one does not resolve). */
function stubResolver(names: Record<string, string[]>) {
  const asked: string[] = [];
  const resolveHost: ResolveHost = async (hostname) => {
    asked.push(hostname);
    const addresses = names[hostname];
    if (!addresses) throw Object.assign(new Error(`${hostname} not found`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return { asked, names, resolveHost };
}

async function ledger(options: Parameters<typeof makeLedger>[0] = {}): Promise<TestLedger> {
  const t = await makeLedger(options);
  cleanups.push(() => t.close());
  return t;
}

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  cleanups.push(() => r.close());
  return r;
}

function worker(...args: Parameters<typeof startWorker>): DeliveryWorker {
  const w = startWorker(...args);
  cleanups.push(() => w.stop());
  return w;
}

/** Creates an account with a threshold of 1 and takes it below: one balance.low event. */
async function crossing(t: TestLedger, externalId: string) {
  await t.call(accountRoutes.create, { body: { externalId, lowBalanceThreshold: 1 } });
  await t.call(ledgerRoutes.add, { body: { accountId: externalId, amount: 2 } });
  await t.call(ledgerRoutes.deduct, { body: { accountId: externalId, amount: 1.5 } });
}

/** Waits until the endpoint's only delivery is no longer pending. @returns it */
async function ended(t: TestLedger, webhookId: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { deliveries } = await t.call(webhookRoutes.deliveries, { query: { webhookId } });
    const [first] = deliveries;
    if (first && first.status !== "pending") return first;
    if (Date.now() > deadline) throw new Error(`delivery still pending: ${JSON.stringify(first)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("address classes", () => {
  it("names each non-public address and passes public ones", () => {
    const nonPublic: [string, string][] = [
      ["127.0.0.1", "loopback"],
      ["127.255.255.254", "loopback"],
      ["10.0.0.1", "private"],
      ["172.16.0.1", "private"],
      ["172.31.255.255", "private"],
      ["192.168.1.1", "private"],
      ["169.254.169.254", "link-local"],
      ["0.0.0.0", "unspecified"],
      ["100.64.0.1", "shared (carrier-grade NAT)"],
      ["198.18.0.1", "benchmarking"],
      ["198.19.255.255", "benchmarking"],
      ["192.0.2.1", "documentation"],
      ["224.0.0.1", "multicast"],
      ["240.0.0.1", "reserved"],
      ["255.255.255.255", "reserved"],
      ["::1", "loopback"],
      ["::", "unspecified"],
      ["fd00::1", "private (unique local)"],
      ["fc00::1", "private (unique local)"],
      ["fe80::1", "link-local"],
      ["fe80::1%eth0", "link-local"],
      ["fd00:ec2::254", "private (unique local)"],
      ["ff02::1", "multicast"],
      ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
      ["::ffff:7f00:1", "IPv4-mapped loopback"],
      ["::ffff:169.254.169.254", "IPv4-mapped link-local"],
      ["64:ff9b::10.0.0.1", "NAT64 of a private"],
      ["64:ff9b::a9fe:a9fe", "NAT64 of a link-local"],
      ["2002:a00:1::", "6to4 of a private"],
      ["2002:7f00:1::1", "6to4 of a loopback"],
      ["2001:db8::1", "documentation"],
      ["2001::1", "reserved"],
      ["::127.0.0.1", "reserved"],
      ["100::1", "reserved (discard)"],
      ["64:ff9b:1::1", "reserved (local NAT64)"],
      ["4000::1", "reserved"],
      ["not-an-ip", "not an IP address"],
    ];
    for (const [address, kind] of nonPublic)
      expect([address, nonPublicKind(address)]).toEqual([address, kind]);
    const publicOnes = [
      "8.8.8.8",
      "1.1.1.1",
      "93.184.216.34",
      "172.32.0.1",
      "100.128.0.1",
      "2606:4700:4700::1111",
      "2a00:1450:4001:80b::200e",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
    ];
    for (const address of publicOnes)
      expect([address, nonPublicKind(address)]).toEqual([address, undefined]);
  });
});

describe("creating a webhook", () => {
  it("refuses non-public hosts in every spelling, naming body.url", async () => {
    const dns = stubResolver({});
    const t = await ledger({
      env: { WEBHOOK_ALLOW_PRIVATE: "false" },
      resolveHost: dns.resolveHost,
    });
    const refused = [
      "http://127.0.0.1/hook",
      "http://127.0.0.1:3000/v1/accounts",
      "http://169.254.169.254/latest/meta-data/",
      "http://10.0.0.1/hook",
      "http://172.16.5.4/hook",
      "http://192.168.0.10/hook",
      "http://0.0.0.0/hook",
      "http://0/hook",
      "http://[::1]/hook",
      "http://[::]/hook",
      "http://[fd12:3456::1]/hook",
      "http://[fe80::1]/hook",
      "http://100.64.1.1/hook",
      "http://198.18.0.5/hook",
      "http://224.0.0.251/hook",
      "http://240.0.0.1/hook",
      "http://2130706433/hook",
      "http://0x7f.1/hook",
      "http://017700000001/hook",
      "http://0177.0.0.1/hook",
      "http://127.1/hook",
      "http://127.0.0.1./hook",
      "https://[::ffff:127.0.0.1]/hook",
      "http://[::ffff:a9fe:a9fe]/hook",
      "http://[64:ff9b::10.0.0.1]/hook",
      "http://[2002:c0a8:1::1]/hook",
      "http://localhost/hook",
      "http://LOCALHOST./hook",
      "http://api.localhost:8080/hook",
      "http://user:secret@127.0.0.1/hook",
    ];
    for (const url of refused) {
      const error = await t.fail(webhookRoutes.create, { body: { url } }, 400, "VALIDATION_ERROR");
      expect(error.error.details, url).toEqual([
        { path: "body.url", message: expect.stringMatching(/^must target a public address: /) },
      ]);
    }
    // Literal addresses and loopback names are judged without DNS.
    expect(dns.asked).toEqual([]);
    expect((await t.call(webhookRoutes.list)).webhooks).toEqual([]);
    const metadata = await t.fail(
      webhookRoutes.create,
      { body: { url: "http://169.254.169.254/" } },
      400,
      "VALIDATION_ERROR",
    );
    expect(metadata.error.message).toBe(
      "Invalid body.url: must target a public address: not a public address: 169.254.169.254 " +
        "(link-local); WEBHOOK_ALLOW_PRIVATE=true allows such targets for local development",
    );
  });

  it("checks every address a name resolves to; accepts a name that does not resolve", async () => {
    const dns = stubResolver({
      "internal.example": ["10.1.2.3"],
      "metadata.example": ["169.254.169.254"],
      "both.example": ["93.184.216.34", "127.0.0.1"],
      "v6.example": ["2606:4700:4700::1111", "fd00::5"],
      "public.example": ["93.184.216.34", "2606:4700:4700::1111"],
    });
    const t = await ledger({
      env: { WEBHOOK_ALLOW_PRIVATE: "false" },
      resolveHost: dns.resolveHost,
    });
    for (const host of ["internal.example", "metadata.example", "both.example", "v6.example"]) {
      const error = await t.fail(
        webhookRoutes.create,
        { body: { url: `https://${host}/hook` } },
        400,
        "VALIDATION_ERROR",
      );
      expect(error.error.details).toEqual([
        { path: "body.url", message: expect.stringContaining("not a public address") },
      ]);
    }
    // Accepted (and nothing is sent: no worker runs here, and creating sends nothing anyway).
    const ok = await t.call(webhookRoutes.create, { body: { url: "https://public.example/hook" } });
    expect(ok.webhook.url).toBe("https://public.example/hook");
    const later = await t.call(webhookRoutes.create, {
      body: { url: "https://not-yet.example/hook" },
    });
    expect(later.webhook.isActive).toBe(true);
    expect(dns.asked).toContain("not-yet.example");
    expect((await t.call(webhookRoutes.list)).pagination.totalCount).toBe(2);
  });

  it("accepts loopback and private targets with WEBHOOK_ALLOW_PRIVATE=true, and sends nothing", async () => {
    const t = await ledger({ env: { WEBHOOK_ALLOW_PRIVATE: "true" } });
    const r = await receiver();
    worker(t);
    for (const url of [r.url("/a"), "http://localhost:9/x", "http://[::1]:9/x"]) {
      await t.call(webhookRoutes.create, { body: { url } });
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(r.attempts.size).toBe(0);
  });
});

describe("delivering", () => {
  it("refuses a loopback target created while allowed, once the worker does not allow it", async () => {
    const t = await ledger({ env: { WEBHOOK_ALLOW_PRIVATE: "true" } });
    const r = await receiver();
    const { webhook } = await t.call(webhookRoutes.create, { body: { url: r.url("/hook") } });
    r.setSecret("/hook", webhook.secret);
    worker(t, { allowPrivate: false, retrySeconds: [0.1] });
    await crossing(t, "acme");
    expect(await ended(t, webhook.id)).toMatchObject({
      status: "failed",
      attempts: 2,
      lastStatusCode: null,
      lastError: "not a public address: 127.0.0.1 (loopback)",
    });
    expect(r.attempts.size).toBe(0);
  });

  it("does not call a name that now resolves to loopback; connects to the checked address when allowed", async () => {
    const dns = stubResolver({});
    const t = await ledger({
      env: { WEBHOOK_ALLOW_PRIVATE: "false" },
      resolveHost: dns.resolveHost,
    });
    const r = await receiver();
    // The name does not resolve when the webhook is created: accepted.
    const url = `http://hooks.example.test:${r.port}/hook`;
    const { webhook } = await t.call(webhookRoutes.create, { body: { url } });
    r.setSecret("/hook", webhook.secret);
    // Then it resolves to this machine.
    dns.names["hooks.example.test"] = ["127.0.0.1"];
    const refusing = worker(t, {
      allowPrivate: false,
      retrySeconds: [],
      resolveHost: dns.resolveHost,
    });
    await crossing(t, "acme");
    expect(await ended(t, webhook.id)).toMatchObject({
      status: "failed",
      attempts: 1,
      lastError: "not a public address: 127.0.0.1 (loopback)",
    });
    expect(r.attempts.size).toBe(0);
    await refusing.stop();

    // Allowed, the same resolution is connected to by address, the name kept in Host.
    const allowing = worker(t, {
      allowPrivate: true,
      retrySeconds: [],
      resolveHost: dns.resolveHost,
    });
    await crossing(t, "beta");
    await r.waitFor(() => r.delivered.length === 1, 5000, "the delivery");
    expect(r.delivered[0]?.host).toBe(`hooks.example.test:${r.port}`);
    expect(r.invalid).toEqual([]);
    await allowing.stop();
  });

  it("fails an attempt whose host does not resolve, with the resolver's code", async () => {
    const dns = stubResolver({});
    const t = await ledger({
      env: { WEBHOOK_ALLOW_PRIVATE: "false" },
      resolveHost: dns.resolveHost,
    });
    const { webhook } = await t.call(webhookRoutes.create, {
      body: { url: "https://gone.example/hook" },
    });
    worker(t, { allowPrivate: false, retrySeconds: [], resolveHost: dns.resolveHost });
    await crossing(t, "acme");
    expect(await ended(t, webhook.id)).toMatchObject({
      status: "failed",
      lastError: "ENOTFOUND",
    });
  });
});
