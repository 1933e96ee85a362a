/**
 * Request logs: pino JSON, one line per request with the request id, route pattern, status,
 * duration and project id; the level from LOG_LEVEL; never an API key, an email or metadata;
 * `X-Request-Id` accepted when safe, generated otherwise, and echoed.
 */
import type { KyselyPlugin } from "kysely";
import type { DestinationStream } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import type { App } from "../src/http/context.ts";
import { createLogger } from "../src/logger.ts";
import { makeLedger, type TestLedger } from "./harness.ts";
import type { LogLine } from "./processes.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A pino destination that keeps each line in memory. */
function memoryStream(): DestinationStream & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    write(chunk: string) {
      for (const line of chunk.split("\n")) if (line) lines.push(line);
    },
  };
}

describe("request logs", () => {
  let t: TestLedger;
  let out: ReturnType<typeof memoryStream>;
  let app: App;

  const call = (
    method: string,
    path: string,
    opts: { body?: unknown; key?: string | null; headers?: Record<string, string> } = {},
  ) => {
    const headers: Record<string, string> = { ...opts.headers };
    const key = opts.key === undefined ? t.key : opts.key;
    if (key !== null) headers["X-API-Key"] = key;
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    return app.request(path, { method, headers, body });
  };
  const parsed = (): LogLine[] => out.lines.map((line): LogLine => JSON.parse(line));

  beforeAll(async () => {
    t = await makeLedger();
    out = memoryStream();
    app = createApp({ ...t.ledger.deps, logger: createLogger("info", out) });
  });
  afterAll(async () => t.close());

  it("writes one JSON line per request with id, route, status, duration and project", async () => {
    out.lines.length = 0;
    const given = "req-2026.11.21:checkout_42";
    const res = await call("POST", "/v1/accounts/create", {
      body: { externalId: "customer-7" },
      headers: { "X-Request-Id": given },
    });
    expect(res.status).toBe(200);
    await call("GET", "/v1/accounts/balance?accountId=customer-7");
    await call("GET", "/v1/accounts/get?accountId=nobody");
    // A probe is logged at debug only (docs/operations.md#logs): not at this logger's info.
    await call("GET", "/health", { key: null });
    const lines = parsed();
    expect(lines).toHaveLength(3);
    expect(lines[0]).toEqual({
      level: 30,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      msg: "request",
      requestId: given,
      method: "POST",
      route: "/v1/accounts/create",
      status: 200,
      durationMs: expect.any(Number),
      projectId: t.projectId,
    });
    expect(lines[1]).toMatchObject({ route: "/v1/accounts/balance", status: 200 });
    expect(lines[2]).toMatchObject({ route: "/v1/accounts/get", status: 404 });
    for (const line of lines) {
      expect(line.requestId).toEqual(expect.any(String));
      expect(line.durationMs).toBeGreaterThanOrEqual(0);
    }
  });

  it("never logs an API key, an email, metadata or a raw URL", async () => {
    out.lines.length = 0;
    const email = "ada.secret@example.com";
    const secret = "metadata-value-5f3a9";
    const wrongKey = "ldg_wrong0key0that0must0not0appear0in0logs000";
    await call("POST", "/v1/accounts/create", {
      body: { externalId: "customer-8", name: "Ada", email, metadata: { note: secret } },
    });
    await call("POST", "/v1/accounts/credits/add", {
      body: { accountId: "customer-8", amount: 12.5, metadata: { note: secret } },
    });
    await call("POST", "/v1/reservations/create", {
      body: { accountId: "customer-8", amount: 2.5, metadata: { note: secret } },
    });
    await call("GET", `/v1/accounts/get?externalId=${encodeURIComponent(email)}`);
    await call("GET", `/v1/accounts/${encodeURIComponent(email)}`);
    await call("GET", "/v1/accounts", { key: wrongKey });
    await call("POST", "/v1/accounts/create", { body: { externalId: "x", email: "nope" } });
    const text = out.lines.join("\n");
    expect(out.lines).toHaveLength(7);
    for (const leak of [t.key, wrongKey, "ldg_", email, "ada.secret", secret, "customer-8"]) {
      expect(text).not.toContain(leak);
    }
    expect(parsed().map((l) => [l.route, l.status])).toEqual([
      ["/v1/accounts/create", 200],
      ["/v1/accounts/credits/add", 200],
      ["/v1/reservations/create", 200],
      ["/v1/accounts/get", 404],
      ["unmatched", 404],
      ["/v1/accounts", 401],
      ["/v1/accounts/create", 400],
    ]);
  });

  it("masks keys and emails in the message of an unexpected error", async () => {
    const failing: KyselyPlugin = {
      transformQuery(args) {
        if (JSON.stringify(args.node).includes('"name":"accounts"')) {
          throw new Error(`SQLITE_IOERR in SELECT … WHERE key = '${t.key}' AND email = 'a@b.io'`);
        }
        return args.node;
      },
      transformResult: async (args) => args.result,
    };
    const deps = t.ledger.deps;
    const broken = createApp({
      ...deps,
      logger: createLogger("info", out),
      db: { ...deps.db, read: deps.db.read.withPlugin(failing) },
    });
    out.lines.length = 0;
    const res = await broken.request("/v1/accounts", { headers: { "X-API-Key": t.key } });
    expect(res.status).toBe(500);
    const lines = parsed();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      level: 50,
      msg: "unhandled error",
      route: "/v1/accounts",
      requestId: res.headers.get("X-Request-Id"),
      err: { name: "Error", message: expect.stringContaining("ldg_[redacted]") },
    });
    expect(lines[1]).toMatchObject({ msg: "request", route: "/v1/accounts", status: 500 });
    const text = out.lines.join("\n");
    expect(text).not.toContain(t.key);
    expect(text).not.toContain("a@b.io");
  });

  it("echoes a safe X-Request-Id and generates one otherwise", async () => {
    out.lines.length = 0;
    // /v1 requests, since a probe's line is at debug (not in this info log).
    const given = await call("GET", "/v1/accounts", { headers: { "X-Request-Id": "abc-123" } });
    expect(given.headers.get("X-Request-Id")).toBe("abc-123");
    const generated = await call("GET", "/v1/accounts");
    expect(generated.headers.get("X-Request-Id")).toMatch(UUID);
    for (const unsafe of ["has spaces", "<script>", "x".repeat(129), ""]) {
      const res = await call("GET", "/v1/accounts", { headers: { "X-Request-Id": unsafe } });
      expect(res.headers.get("X-Request-Id")).toMatch(UUID);
    }
    // Also on errors, replays and responses of every kind.
    const error = await call("GET", "/v1/accounts", {
      key: null,
      headers: { "X-Request-Id": "e1" },
    });
    expect(error.status).toBe(401);
    expect(error.headers.get("X-Request-Id")).toBe("e1");
    const body = { externalId: "customer-9" };
    const headers = { "Idempotency-Key": "idem-1", "X-Request-Id": "r1" };
    await call("POST", "/v1/accounts/create", { body, headers });
    const replay = await call("POST", "/v1/accounts/create", {
      body,
      headers: { ...headers, "X-Request-Id": "r2" },
    });
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.headers.get("X-Request-Id")).toBe("r2");
    // The logged ids are the echoed ones.
    expect(parsed().map((l) => l.requestId)).toEqual([
      "abc-123",
      generated.headers.get("X-Request-Id"),
      expect.stringMatching(UUID),
      expect.stringMatching(UUID),
      expect.stringMatching(UUID),
      expect.stringMatching(UUID),
      "e1",
      "r1",
      "r2",
    ]);
  });

  it("logs /health, /ready and /metrics requests at debug only", async () => {
    for (const level of ["info", "debug"] as const) {
      const lines = memoryStream();
      const probed = createApp({ ...t.ledger.deps, logger: createLogger(level, lines) });
      for (const path of ["/health", "/ready", "/metrics"]) {
        expect((await probed.request(path)).status).toBe(200);
      }
      await probed.request("/v1/accounts", { headers: { "X-API-Key": t.key } });
      const logged = lines.lines.map((line): LogLine => JSON.parse(line));
      const probes = logged.filter((l) => l.route !== "/v1/accounts");
      expect(logged.filter((l) => l.route === "/v1/accounts")).toHaveLength(1);
      if (level === "info") expect(probes).toEqual([]);
      else {
        expect(probes.map((l) => [l.route, l.level, l.msg])).toEqual([
          ["/health", 20, "request"],
          ["/ready", 20, "request"],
          ["/metrics", 20, "request"],
        ]);
      }
    }
  });

  it("logs at LOG_LEVEL: warn keeps request lines out, silent everything", async () => {
    for (const level of ["warn", "silent"] as const) {
      const quiet = memoryStream();
      const quietApp = createApp({ ...t.ledger.deps, logger: createLogger(level, quiet) });
      // A /v1 request (here a 401) is logged at info, so neither level may show it.
      await quietApp.request("/v1/accounts");
      expect(quiet.lines).toEqual([]);
    }
    expect(loadConfig({ LOG_LEVEL: "debug" }).LOG_LEVEL).toBe("debug");
    expect(loadConfig({}).LOG_LEVEL).toBe("info");
  });
});

describe("X-Request-Id and Content-Type over real HTTP (Node's own response objects)", () => {
  let t: TestLedger;
  let base: string;
  beforeAll(async () => {
    t = await makeLedger();
    base = await t.listen();
  });
  afterAll(async () => t.close());

  /** A request over HTTP; returns the status, the raw header lines and the body text. */
  const send = async (path: string, init: RequestInit & { headers?: Record<string, string> }) => {
    const res = await fetch(base + path, init);
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
  const keyed = (more: Record<string, string> = {}) => ({ "X-API-Key": t.key, ...more });
  const json = { "Content-Type": "application/json" };

  it("echoes a given id and generates one otherwise, on answers of every kind", async () => {
    const cases = [
      // an answer, an error thrown by the middleware, a route that does not exist, a body too
      // large, malformed JSON, a refused deduction, and a page of HTML
      send("/v1/accounts", { headers: keyed({ "X-Request-Id": "h-1" }) }),
      send("/v1/accounts", { headers: { "X-Request-Id": "h-2" } }),
      send("/v1/nothing-here", { headers: keyed({ "X-Request-Id": "h-3" }) }),
      send("/v1/accounts/create", {
        method: "POST",
        headers: keyed({ ...json, "X-Request-Id": "h-4" }),
        body: JSON.stringify({ externalId: "big", metadata: { pad: "x".repeat(70_000) } }),
      }),
      send("/v1/accounts/create", {
        method: "POST",
        headers: keyed({ ...json, "X-Request-Id": "h-5" }),
        body: "{not json",
      }),
      send("/v1/accounts/credits/deduct", {
        method: "POST",
        headers: keyed({ ...json, "X-Request-Id": "h-6" }),
        body: JSON.stringify({ accountId: "nobody", amount: 1 }),
      }),
      send("/console", { headers: { "X-Request-Id": "h-7" } }),
    ];
    const answers = await Promise.all(cases);
    expect(answers.map((a) => a.status)).toEqual([200, 401, 404, 413, 400, 404, 200]);
    expect(answers.map((a) => a.headers.get("X-Request-Id"))).toEqual([
      "h-1",
      "h-2",
      "h-3",
      "h-4",
      "h-5",
      "h-6",
      "h-7",
    ]);
    // JSON answers say so; the console page keeps its own type.
    for (const a of answers.slice(0, 6)) {
      expect(a.headers.get("Content-Type")).toBe("application/json");
      expect(JSON.parse(a.text)).toBeTypeOf("object");
    }
    expect(answers[6]?.headers.get("Content-Type")).toMatch(/^text\/html/);
    const generated = await send("/health", { headers: { "X-Request-Id": "not safe" } });
    expect(generated.headers.get("X-Request-Id")).toMatch(UUID);
    expect(await send("/health", {}).then((a) => a.headers.get("X-Request-Id"))).toMatch(UUID);
  });

  it("sends the id once, also on an idempotent replay that sets a header of its own", async () => {
    const post = (id: string) =>
      send("/v1/accounts/create", {
        method: "POST",
        headers: keyed({ ...json, "Idempotency-Key": "once", "X-Request-Id": id }),
        body: JSON.stringify({ externalId: "replayed" }),
      });
    const first = await post("first");
    const replay = await post("second");
    expect([first.status, replay.status]).toEqual([200, 200]);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(replay.headers.get("X-Request-Id")).toBe("second");
    expect(replay.text).toBe(first.text);
  });
});
