/**
 * The Node objects under a request when @hono/node-server serves it (`c.env.incoming`,
 * `c.env.outgoing`); undefined on Bun, Deno and in-process calls (`app.request`). The hot path
 * uses them where the standard objects cost more than the work itself
 * (docs/design.md#http-on-node).
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** The Node request, or undefined on other runtimes. */
export function nodeIncoming(env: unknown): IncomingMessage | undefined {
  const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming && typeof incoming.on === "function" ? incoming : undefined;
}

/** The Node response being written, or undefined on other runtimes. */
export function nodeOutgoing(env: unknown): ServerResponse | undefined {
  const outgoing = (env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  return outgoing && typeof outgoing.setHeader === "function" ? outgoing : undefined;
}
