/**
 * Request bodies of POSTs under /v1 (docs/api.md, "Errors"): at most `limitBytes` (else 413),
 * of type application/json in UTF-8 (else 415), parsed exactly by `parseRequestJson` (else
 * 400). `c.req.json()` then answers that parsed value, so the zod validators and the
 * idempotency check read that one value without parsing again.
 *
 * On Node the body is read straight from the `IncomingMessage` that @hono/node-server passes as
 * `c.env.incoming`: going through the standard `Request` would first build an undici Request
 * and a web stream around it, which costs more than the rest of a deduction. Other runtimes use
 * their own `Request` and Hono's bodyLimit.
 */
import type { IncomingMessage } from "node:http";
import type { HonoRequest, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { ApiError } from "../errors.ts";
import type { AppEnv } from "./context.ts";
import { parseRequestJson } from "./json.ts";
import { nodeIncoming } from "./node-env.ts";

function tooLarge(limitBytes: number): ApiError {
  return new ApiError("PAYLOAD_TOO_LARGE", `Request body is larger than ${limitBytes} bytes`);
}

/**
 * Reads a Node request body's bytes, by the stream's own events: an async iterator over the
 * stream costs a promise per chunk and a stream-end watcher per request, which a deduction's
 * on-CPU profile showed as 2.2% of the service's samples
 * (docs/benchmarks.md#how-the-speed-work-was-led).
 * @throws ApiError PAYLOAD_TOO_LARGE past the limit (the rest is not kept; the caller closes the
 *   connection after its answer); the stream's error when the client goes away before the
 *   body ends
 */
function readIncoming(incoming: IncomingMessage, limitBytes: number): Promise<Buffer> {
  // Already read to its end by someone else: nothing is left to read.
  if (incoming.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err: Error | undefined) => {
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onError);
      incoming.off("close", onClose);
      if (err) reject(err);
      else resolve(chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limitBytes) {
        chunks.push(chunk);
        return;
      }
      settle(tooLarge(limitBytes));
    };
    const onEnd = () => settle(undefined);
    const onError = (err: Error) => settle(err);
    // Closed before its end without an error: the client went away.
    const onClose = () => settle(new Error("the request was closed before its body ended"));
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onError);
    incoming.on("close", onClose);
  });
}

/**
 * `application/json` or `application/<x>+json`, with no `charset` parameter or a UTF-8 one.
 * @throws ApiError UNSUPPORTED_MEDIA_TYPE otherwise
 */
function requireJsonType(type: string): void {
  const [essence = "", ...params] = type.split(";");
  if (!/^\s*application\/(?:[\w.+-]+\+)?json\s*$/i.test(essence)) {
    throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json");
  }
  for (const param of params) {
    const [name = "", value = ""] = param.split("=");
    if (name.trim().toLowerCase() !== "charset") continue;
    if (!/^"?utf-?8"?$/i.test(value.trim())) {
      throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "A JSON body must be UTF-8 (charset=utf-8)");
    }
  }
}

/**
 * Makes `req.json()` answer `value`, the exact parse, for the rest of the request: the zod
 * validators and the idempotency check read the body through it, and Hono's own `json()` would
 * parse the text again with `JSON.parse`, rounding numbers through doubles.
 */
function provideJson(req: HonoRequest, value: unknown): void {
  sent.set(req, value);
  Object.defineProperty(req, "json", { value: () => Promise.resolve(value) });
}

/** The exact parse of each request's body, by request (`provideJson`). */
const sent = new WeakMap<HonoRequest, unknown>();

/**
 * The JSON body `req` sent, as parsed exactly by the body checks, without waiting: what
 * `req.json()` answers. `undefined` when the checks did not read it (no POST under `/v1`).
 */
export function sentJson(req: HonoRequest): unknown {
  return sent.get(req);
}

/**
 * The body checks, as middleware for `/v1/*` (GETs pass through).
 * @param larger paths whose body may be larger than `limitBytes`, with their limit in bytes
 *   (`/v1/batch`: 1 MiB, docs/api.md#batches)
 */
export function jsonBodyChecks(
  defaultLimitBytes: number,
  larger: ReadonlyMap<string, number> = new Map(),
): MiddlewareHandler<AppEnv> {
  const standardLimit = (limitBytes: number) =>
    bodyLimit({
      maxSize: limitBytes,
      onError: () => {
        throw tooLarge(limitBytes);
      },
    });
  const standardLimits = new Map<number, MiddlewareHandler>();
  for (const limitBytes of [defaultLimitBytes, ...larger.values()]) {
    standardLimits.set(limitBytes, standardLimit(limitBytes));
  }
  return async (c, next) => {
    if (c.req.method !== "POST") return next();
    const limitBytes = larger.get(c.req.path) ?? defaultLimitBytes;
    const incoming = nodeIncoming(c.env);
    if (!incoming) {
      const limit = standardLimits.get(limitBytes) ?? standardLimit(limitBytes);
      return limit(c, async () => {
        requireJsonType(c.req.header("Content-Type") ?? "");
        provideJson(c.req, parseRequestJson(new Uint8Array(await c.req.arrayBuffer())));
        await next();
      });
    }
    if (Number(c.req.header("Content-Length")) > limitBytes) throw tooLarge(limitBytes);
    requireJsonType(c.req.header("Content-Type") ?? "");
    const bytes = await readIncoming(incoming, limitBytes).catch((err: unknown) => {
      // The rest of a body past the limit is not read: the connection closes after the 413.
      if (err instanceof ApiError && err.code === "PAYLOAD_TOO_LARGE") {
        c.header("Connection", "close");
      }
      throw err;
    });
    provideJson(c.req, parseRequestJson(bytes));
    await next();
  };
}
