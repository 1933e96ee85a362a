/**
 * A webhook receiver for tests: a real node:http server on 127.0.0.1 that verifies every
 * delivery with the `standardwebhooks` library and the endpoint's secret, records what arrived,
 * answers as each test tells it (a status, or never), and counts how many attempts of one event
 * (`webhook-id`) are on the wire at once. A delivery counts as valid only when its signature
 * verifies, its body has the event envelope (`id`, `type`, `createdAt`, `data`), and its `data`
 * is exactly what the event type's published schema describes (no field missing or extra).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "@hono/zod-openapi";
import { Webhook } from "standardwebhooks";
import { EVENTS } from "../src/events.ts";
import type { ResolveHost } from "../src/resolve-host.ts";
import { startDeliveryWorker } from "../src/webhooks/delivery.ts";
import { type EventType, SENT_EVENT_TYPES } from "../src/webhooks/outbox.ts";
import { webhookRoutes } from "../src/webhooks/routes.ts";
import type { TestLedger } from "./harness.ts";

/** The envelope every event has; a loose object, so that no field of the body is dropped. */
const eventSchema = z.looseObject({
  id: z.string(),
  type: z.enum(SENT_EVENT_TYPES),
  createdAt: z.string(),
  data: z.record(z.string(), z.unknown()),
});

/** A delivered event as its body has it; `data` is the event type's object. */
export type ReceivedEvent = z.infer<typeof eventSchema>;

export interface Received {
  path: string;
  /** The `webhook-id` header: the event id. */
  id: string;
  event: ReceivedEvent;
  /** The raw body, as signed. */
  body: string;
  /** The `Host` header the attempt carried. */
  host: string;
  /** When the attempt arrived (epoch ms, by the wall clock). */
  arrivedAtMs: number;
}

/** What the receiver answers an attempt with: a status, or `hang` (never answers). */
export type Answer = number | "hang";

export interface Receiver {
  port: number;
  /** The URL of `path` on this receiver. */
  url(path?: string): string;
  /** The secret deliveries to `path` are verified with. */
  setSecret(path: string, secret: string): void;
  /** How to answer the `n`th attempt (1-based) at `path`; default 200. */
  answer: (path: string, n: number, id: string) => Answer;
  /** Milliseconds each answer waits on the wire (default 5). */
  delayMs: number;
  /** Verified deliveries answered 2xx, in arrival order (duplicates kept). */
  delivered: Received[];
  /** Every attempt per path. */
  attempts: Map<string, number>;
  /** Attempts whose signature did not verify (or had no secret). */
  invalid: string[];
  /** The most attempts of one event on the wire at once, over all events. */
  maxInFlightPerEvent: number;
  /** Attempts on the wire now, per path. */
  inFlightPerPath: Map<string, number>;
  /** The most attempts at one path on the wire at once, per path. */
  maxInFlightPerPath: Map<string, number>;
  /** Waits until `check()` holds. @throws Error after `timeoutMs` */
  waitFor(check: () => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

/** Starts a receiver on a loopback port (`port`, or a random one). */
export async function startReceiver(port = 0): Promise<Receiver> {
  const secrets = new Map<string, string>();
  const inFlight = new Map<string, number>();
  const hanging = new Set<ServerResponse>();
  const receiver: Receiver = {
    port: 0,
    url: (path = "/hook") => `http://127.0.0.1:${receiver.port}${path}`,
    setSecret: (path, secret) => secrets.set(path, secret),
    answer: () => 200,
    delayMs: 5,
    delivered: [],
    attempts: new Map(),
    invalid: [],
    maxInFlightPerEvent: 0,
    inFlightPerPath: new Map(),
    maxInFlightPerPath: new Map(),
    waitFor: async (check, timeoutMs = 10_000, what = "condition") => {
      const deadline = Date.now() + timeoutMs;
      while (!check()) {
        if (Date.now() > deadline) throw new Error(`receiver: no ${what} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const arrivedAtMs = Date.now();
    const onPath = (receiver.inFlightPerPath.get(req.url ?? "/") ?? 0) + 1;
    receiver.inFlightPerPath.set(req.url ?? "/", onPath);
    const most = receiver.maxInFlightPerPath.get(req.url ?? "/") ?? 0;
    receiver.maxInFlightPerPath.set(req.url ?? "/", Math.max(most, onPath));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const path = req.url ?? "/";
    const id = String(req.headers["webhook-id"] ?? "");
    const n = (receiver.attempts.get(path) ?? 0) + 1;
    receiver.attempts.set(path, n);
    const now = (inFlight.get(id) ?? 0) + 1;
    inFlight.set(id, now);
    receiver.maxInFlightPerEvent = Math.max(receiver.maxInFlightPerEvent, now);
    const done = () => {
      inFlight.set(id, (inFlight.get(id) ?? 1) - 1);
      receiver.inFlightPerPath.set(path, (receiver.inFlightPerPath.get(path) ?? 1) - 1);
    };
    let event: ReceivedEvent;
    try {
      const secret = secrets.get(path);
      if (!secret) throw new Error("no secret for this path");
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      event = eventSchema.parse(new Webhook(secret).verify(body, headers));
      EVENTS[event.type].data.strict().parse(event.data);
    } catch (err) {
      receiver.invalid.push(`${path}: ${(err as Error).message}`);
      done();
      res.writeHead(400).end();
      return;
    }
    const answer = receiver.answer(path, n, id);
    if (answer === "hang") {
      hanging.add(res);
      res.on("close", () => {
        hanging.delete(res);
        done();
      });
      return;
    }
    // A short pause on the wire, so that two processes attempting one event would overlap.
    await new Promise((r) => setTimeout(r, receiver.delayMs));
    if (answer >= 200 && answer < 300) {
      const host = String(req.headers.host ?? "");
      receiver.delivered.push({ path, id, event, body, host, arrivedAtMs });
    }
    done();
    res.writeHead(
      answer,
      answer >= 300 && answer < 400 ? { Location: receiver.url("/moved") } : {},
    );
    res.end("ok");
  };

  const server = createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  receiver.port = (server.address() as AddressInfo).port;
  return receiver;
}

/** A port on 127.0.0.1 where nothing listens (bound once, then closed). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Starts the delivery worker of a test ledger, with short delays. It may reach loopback
 * receivers unless `allowPrivate` is false. @returns its stop
 */
export function startWorker(
  t: TestLedger,
  options: {
    retrySeconds?: number[];
    timeoutSeconds?: number;
    concurrency?: number;
    allowPrivate?: boolean;
    resolveHost?: ResolveHost;
  } = {},
) {
  return startDeliveryWorker({
    db: t.ledger.db,
    queue: t.ledger.queue,
    clock: t.ledger.deps.clock,
    logger: t.ledger.deps.logger,
    metrics: t.ledger.deps.metrics,
    retrySeconds: options.retrySeconds ?? [0.2, 0.2],
    timeoutSeconds: options.timeoutSeconds ?? 5,
    concurrency: options.concurrency ?? 8,
    pollMs: 20,
    targets: {
      allowPrivate: options.allowPrivate ?? true,
      ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
    },
  });
}

/** Creates a webhook endpoint at `receiver`'s `path` and gives the receiver its secret. */
export async function createHook(
  t: TestLedger,
  receiver: Receiver,
  path: string,
  events?: EventType[],
  url = receiver.url(path),
): Promise<string> {
  const { webhook } = await t.call(webhookRoutes.create, {
    body: { url, ...(events ? { events } : {}) },
  });
  receiver.setSecret(path, webhook.secret);
  return webhook.id;
}
