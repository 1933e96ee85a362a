/**
 * `createLedgerClient`: an `openapi-fetch` client of the credit ledger, typed by the types
 * generated from the service's own OpenAPI document (./openapi.ts), that never rounds an amount
 * (docs/api.md#typed-client):
 *
 * - a request body is written with `stringifyExact`, so an amount given as a `LosslessNumber`
 *   reaches the wire as its exact literal;
 * - a response body, success or error, is read with `parseExact`: a number that a double holds
 *   exactly is a `number`, any other a `LosslessNumber` (the generated types call such a field
 *   an `Amount`).
 *
 * openapi-fetch parses bodies with `JSON.parse`; the client keeps each body's text (one
 * middleware, run after any the caller adds) and reads it again exactly before handing the
 * result over. Runs on Node 20+, Bun, Deno and browsers: fetch, Request and Response only.
 */
import createClient, { type Client, type Middleware } from "openapi-fetch";
import { parseExact, stringifyExact } from "./exact-json.ts";
import type { paths } from "./openapi.ts";

/** A client of the credit ledger's API (`client.GET(path, …)`, `client.POST(path, …)`). */
export type LedgerClient = Client<paths, "application/json">;

export interface LedgerClientOptions {
  /** Where the service answers, without `/v1`: `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** An API key of the project (`ldg_…`), sent as `X-API-Key` on every request. */
  apiKey: string;
  /** Sends a request (default: the runtime's global `fetch`). */
  fetch?: (request: Request) => Promise<Response>;
}

/** A body as the service sent it, and how the caller asked openapi-fetch to parse it. */
interface KeptBody {
  text: string;
  parseAs: string;
}

/** The statuses whose response may not carry a body (`new Response` refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * The middleware that keeps each response body's text: it reads the body and hands on a copy
 * of the response with the same status, headers, URL and text.
 */
function keepBodies(kept: WeakMap<Response, KeptBody>): Middleware {
  return {
    async onResponse({ response, options }) {
      if (response.body === null || NULL_BODY_STATUSES.has(response.status)) return undefined;
      const text = await response.text();
      const copy = new Response(text, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
      Object.defineProperty(copy, "url", { value: response.url });
      kept.set(copy, { text, parseAs: options.parseAs });
      return copy;
    },
  };
}

/** What every method of an openapi-fetch client resolves to. */
interface Outcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** The error body as data: parsed exactly, or the text itself when it is not JSON. */
function exactOrText(text: string): unknown {
  try {
    return parseExact(text);
  } catch {
    return text;
  }
}

/**
 * `call`, with the body of its outcome read again exactly from the kept text: `data` when the
 * caller asked for JSON (the default), `error` always (openapi-fetch parses errors as JSON).
 */
function exactly<F extends (...args: never[]) => Promise<Outcome>>(
  call: F,
  kept: WeakMap<Response, KeptBody>,
): F {
  const wrapped = async (...args: Parameters<F>): Promise<Outcome> => {
    const outcome = await call(...args);
    const body = kept.get(outcome.response);
    if (body === undefined) return outcome;
    if (outcome.error !== undefined) return { ...outcome, error: exactOrText(body.text) };
    if (body.parseAs !== "json" || outcome.data === undefined) return outcome;
    return { ...outcome, data: parseExact(body.text) };
  };
  // The one cast of the client: `wrapped` takes what `call` takes and resolves to the same
  // outcome, its body read again from the same text; only its numbers may be `LosslessNumber`s
  // where the generated types say `Amount`. TypeScript cannot carry `call`'s generic signature
  // through a wrapper by itself.
  return wrapped as F;
}

/**
 * A client of the service at `baseUrl` with the project key `apiKey`:
 * `const { data, error, response } = await client.POST("/v1/accounts/credits/deduct", { body,
 * headers: { "Idempotency-Key": key } })`. `data` is the 200 body, typed by the route; `error`
 * is the error body (`{success: false, error: {code, message, details?}}`); amounts are
 * `Amount`s. A failure to reach the service rejects, as `fetch` does.
 */
export function createLedgerClient(options: LedgerClientOptions): LedgerClient {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const client = createClient<paths, "application/json">({
    baseUrl: options.baseUrl,
    fetch: send,
    headers: { "X-API-Key": options.apiKey },
    bodySerializer: stringifyExact,
  });
  const kept = new WeakMap<Response, KeptBody>();
  // Registered first, so that its onResponse runs last, after any middleware the caller adds.
  client.use(keepBodies(kept));
  return {
    ...client,
    request: exactly(client.request, kept),
    GET: exactly(client.GET, kept),
    PUT: exactly(client.PUT, kept),
    POST: exactly(client.POST, kept),
    DELETE: exactly(client.DELETE, kept),
    OPTIONS: exactly(client.OPTIONS, kept),
    HEAD: exactly(client.HEAD, kept),
    PATCH: exactly(client.PATCH, kept),
    TRACE: exactly(client.TRACE, kept),
  };
}
