/**
 * Test harness: a fresh ledger on a temporary database *file* (not :memory:), copied from the
 * run's migrated and seeded template (test/templates.ts); the real app, a project with its API
 * key, the typed client of the package (src/client) calling the app in-process, an optional fake
 * clock, and a real listening server on demand.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RouteConfig } from "@hono/zod-openapi";
import { createApp } from "../src/app.ts";
import { stringifyExact } from "../src/client/exact-json.ts";
import { createLedgerClient, type LedgerClient } from "../src/client/index.ts";
import { loadConfig } from "../src/config.ts";
import { createProjectKey } from "../src/db/api-keys.ts";
import type { ErrorBody, ErrorCode } from "../src/errors.ts";
import type { App } from "../src/http/context.ts";
import { type HttpServer, serveHttp } from "../src/http/serve.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import type { ResolveHost } from "../src/resolve-host.ts";
import { type Ledger, openLedger } from "../src/runtime.ts";
import { expectError, findRoute, type OkBody, responseProblems } from "./contract.ts";
import { migratedDatabase } from "./templates.ts";

/**
 * A raw response of `t.api`. The body is the parsed JSON (or the text when it is not JSON), of
 * no known type: read an error through `expectError` (test/contract.ts), anything else through
 * a typed `t.call`, or a zod parse where a typed call cannot express the request.
 */
export interface ApiResponse {
  status: number;
  body: unknown;
  headers: Headers;
}

/** The parts of a typed call: query parameters, a JSON body, the key, extra headers. */
export interface CallInput {
  query?: Record<string, string | number | boolean>;
  body?: unknown;
  key?: string | null;
  headers?: Record<string, string>;
}

export interface TestLedger {
  ledger: Ledger;
  app: App;
  key: string;
  projectId: string;
  dir: string;
  /** The ledger's DATABASE_URL: a file in `dir`, or a PostgreSQL database (pg-harness.ts). */
  databaseUrl: string;
  /** DATABASE_URL, with DATABASE_AUTH_TOKEN on remote libSQL: for a second ledger on it. */
  databaseEnv: { DATABASE_URL: string; DATABASE_AUTH_TOKEN?: string };
  /** The fake clock's time (epoch ms); only meaningful with `fakeClock`. */
  now: () => number;
  setNow: (ms: number) => void;
  advance: (ms: number) => void;
  /**
   * The typed client (`credit-ledger/client`) with the project's key, calling the app
   * in-process. Every /v1 answer is checked against its route's schema, as `api` checks it.
   */
  client: LedgerClient;
  /**
   * The typed client with another API key, calling the app in-process or, given `base` (a URL
   * of `listen`), over real HTTP with the runtime's fetch; answers checked the same way.
   */
  clientFor: (key: string, base?: string) => LedgerClient;
  /** Calls the app in-process. `key: null` sends no X-API-Key. */
  api: (
    method: string,
    path: string,
    options?: { body?: unknown; key?: string | null; headers?: Record<string, string> },
  ) => Promise<ApiResponse>;
  /**
   * Calls `route` and expects 200. @returns the body, parsed with the route's own 200 schema
   * @throws Error (failing the test) on any other status
   */
  call: <R extends RouteConfig>(route: R, input?: CallInput) => Promise<OkBody<R>>;
  /** Calls `route` and expects the API's error `status`/`code`. @returns the error body */
  fail: <R extends RouteConfig>(
    route: R,
    input: CallInput,
    status: number,
    code: ErrorCode,
  ) => Promise<ErrorBody>;
  /** A second project with its own key. */
  newProject: (name: string) => Promise<{ projectId: string; key: string }>;
  /** Starts a real HTTP server on a random port. @returns its base URL */
  listen: () => Promise<string>;
  /** Runs `ledger verify`'s checks; returns the problems (empty when all hold). */
  verify: () => Promise<string[]>;
  close: () => Promise<void>;
}

/** A route's path with `input.query` as its query string. */
function pathOf(route: RouteConfig, input: CallInput): string {
  const entries = Object.entries(input.query ?? {}).map(([k, v]): [string, string] => [
    k,
    String(v),
  ]);
  return entries.length === 0 ? route.path : `${route.path}?${new URLSearchParams(entries)}`;
}

/**
 * The environment every test ledger starts from: webhooks may target loopback receivers
 * (docs/operations.md#webhooks), since tests send traffic only to 127.0.0.1. A test of the
 * default refusal sets `WEBHOOK_ALLOW_PRIVATE: "false"`.
 */
export const TEST_ENV = { WEBHOOK_ALLOW_PRIVATE: "true" };

/**
 * A fresh ledger. `fakeClock`: start time (ISO) of a clock that moves only when told; `env`:
 * configuration on top of TEST_ENV; `resolveHost`: a stub resolver of webhook hosts.
 */
export async function makeLedger(
  options: { fakeClock?: string; env?: Record<string, string>; resolveHost?: ResolveHost } = {},
): Promise<TestLedger> {
  const dir = mkdtempSync(join(tmpdir(), "ledger-test-"));
  let fake = options.fakeClock ? Date.parse(options.fakeClock) : undefined;
  const clock = fake === undefined ? Date.now : () => fake as number;
  const database = await migratedDatabase(dir);
  const config = loadConfig({ ...database.env, ...TEST_ENV, ...options.env });
  const ledger = await openLedger(config, {
    clock,
    ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
  });
  const { projectId, apiKey: key } = await createProjectKey(ledger.queue, "test");
  const app = createApp(ledger.deps);
  const servers: HttpServer[] = [];

  /** Every /v1 answer must match what its route declares (docs/api.md#endpoints). */
  const checkAnswer = (method: string, path: string, res: Response, parsed: unknown) => {
    if (path.startsWith("/v1/") && res.headers.get("Content-Type")?.includes("json")) {
      const problems = responseProblems(findRoute(app, method, path), res.status, parsed);
      if (problems.length > 0) {
        throw new Error(`${method} ${path} answered ${res.status} off its schema: ${problems}`);
      }
    }
  };

  /** The typed client over `app.request` or `fetch`, each answer checked like `api`'s. */
  const clientFor = (apiKey: string, base?: string) =>
    createLedgerClient({
      baseUrl: base ?? "http://ledger.test",
      apiKey,
      fetch: async (request) => {
        const res = await (base === undefined ? app.request(request) : fetch(request));
        const text = await res.clone().text();
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {}
        checkAnswer(request.method, new URL(request.url).pathname, res, parsed);
        return res;
      },
    });

  const api: TestLedger["api"] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    const useKey = opts.key === undefined ? key : opts.key;
    if (useKey !== null) headers["X-API-Key"] = useKey;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["Content-Type"] ??= "application/json";
    }
    const res = await app.request(path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {}
    checkAnswer(method, path, res, parsed);
    return { status: res.status, body: parsed, headers: res.headers };
  };

  return {
    ledger,
    app,
    key,
    projectId,
    dir,
    databaseUrl: database.url,
    databaseEnv: database.env,
    now: () => clock(),
    setNow: (ms) => {
      fake = ms;
    },
    advance: (ms) => {
      if (fake === undefined) throw new Error("advance needs fakeClock");
      fake += ms;
    },
    client: clientFor(key),
    clientFor,
    api,
    call: async (route, input = {}) => {
      const res = await api(route.method.toUpperCase(), pathOf(route, input), input);
      if (res.status !== 200) {
        throw new Error(`${route.path} answered ${res.status}: ${JSON.stringify(res.body)}`);
      }
      // `api` has parsed the body with this route's 200 schema above.
      return res.body as OkBody<typeof route>;
    },
    fail: async (route, input, status, code) =>
      expectError(await api(route.method.toUpperCase(), pathOf(route, input), input), status, code),
    newProject: async (name) => {
      const p = await createProjectKey(ledger.queue, name);
      return { projectId: p.projectId, key: p.apiKey };
    },
    listen: async () => {
      // The service's own serving adapter, so tests see what a client of `ledger serve` sees.
      const server = await serveHttp({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
      servers.push(server);
      return `http://127.0.0.1:${server.port}`;
    },
    verify: async () => (await verifyLedger(ledger.db.read, clock())).problems,
    close: async () => {
      await Promise.all(servers.map((s) => s.close()));
      await ledger.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates an account (externalId) and optionally funds it. @returns the account id */
export async function fundedAccount(t: TestLedger, externalId: string, credits = 0) {
  const { account } = expectOk(
    await t.client.POST("/v1/accounts/create", { body: { externalId } }),
  );
  if (credits > 0) {
    expectOk(
      await t.client.POST("/v1/accounts/credits/add", {
        body: { accountId: externalId, amount: credits },
      }),
    );
  }
  return account.id;
}

/** What a call of the typed client resolves to. */
interface ClientOutcome<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/**
 * Asserts that a call of the typed client answered 200 with a body.
 * @returns the body, typed by the route
 * @throws Error (failing the test) with the status and the error body otherwise
 */
export function expectOk<D>(outcome: ClientOutcome<D>): D {
  const { data, error, response } = outcome;
  if (response.status !== 200 || data === undefined) {
    throw new Error(`${response.status} instead of 200: ${stringifyExact(error)}`);
  }
  return data;
}

/**
 * Asserts that a call of the typed client answered the API's error `status`/`code` (the
 * checks of `expectError`, test/contract.ts). @returns the error body
 */
export function expectFailure(
  outcome: ClientOutcome<unknown>,
  status: number,
  code: ErrorCode,
): ErrorBody {
  return expectError({ status: outcome.response.status, body: outcome.error }, status, code);
}
