/**
 * Request bodies of POSTs under /v1 (contract §2): at most `limitBytes` (else 413), of type
 * application/json (else 415), parsing as JSON (else 400). Hono caches the body text, so the
 * zod validators read the same body without reading the stream again.
 *
 * On Node the body is read straight from the `IncomingMessage` that @hono/node-server passes as
 * `c.env.incoming`: going through the standard `Request` would first build an undici Request
 * and a web stream around it, which costs more than the rest of a deduction. Other runtimes use
 * their own `Request` and Hono's bodyLimit.
 */
import type { IncomingMessage } from "node:http";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { ApiError } from "../errors.ts";
import type { AppEnv } from "./context.ts";

function tooLarge(limitBytes: number): ApiError {
  return new ApiError("PAYLOAD_TOO_LARGE", `Request body is larger than ${limitBytes} bytes`);
}

/** Reads a Node request body as UTF-8 text. @throws ApiError PAYLOAD_TOO_LARGE past the limit */
async function readIncoming(incoming: IncomingMessage, limitBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of incoming as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw tooLarge(limitBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString("utf8");
}

/** The Node request under @hono/node-server, or undefined on other runtimes. */
function nodeIncoming(env: unknown): IncomingMessage | undefined {
  const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming && typeof incoming.on === "function" ? incoming : undefined;
}

/** The body checks, as middleware for `/v1/*` (GETs pass through). */
export function jsonBodyChecks(limitBytes: number): MiddlewareHandler<AppEnv>[] {
  const standardLimit = bodyLimit({
    maxSize: limitBytes,
    onError: () => {
      throw tooLarge(limitBytes);
    },
  });
  const limit: MiddlewareHandler<AppEnv> = async (c, next) => {
    const incoming = nodeIncoming(c.env);
    if (!incoming) return standardLimit(c, next);
    if (Number(c.req.header("Content-Length")) > limitBytes) throw tooLarge(limitBytes);
    const text = await readIncoming(incoming, limitBytes);
    (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text);
    await next();
  };
  const parse: MiddlewareHandler<AppEnv> = async (c, next) => {
    const type = c.req.header("Content-Type") ?? "";
    if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
      throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json");
    }
    try {
      await c.req.json();
    } catch {
      throw new ApiError("VALIDATION_ERROR", "Malformed JSON in request body", [
        { path: "body", message: "malformed JSON" },
      ]);
    }
    await next();
  };
  return [
    async (c, next) => (c.req.method === "POST" ? limit(c, next) : next()),
    async (c, next) => (c.req.method === "POST" ? parse(c, next) : next()),
  ];
}
