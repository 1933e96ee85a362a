/**
 * Serves a fetch handler on whichever runtime runs the process: Node (@hono/node-server), Bun
 * (`Bun.serve`) or Deno (`Deno.serve`). Each returns the bound port and a graceful `close()`
 * that stops accepting connections and resolves once the requests in flight have answered.
 *
 * The Bun and Deno globals are declared here, minimally, from `globalThis`: the project type
 * checks against Node's types only.
 */
import type { Server } from "node:http";
import type { Duplex } from "node:stream";
import { ApiError } from "../errors.ts";

/** The runtimes the service runs on. */
export type RuntimeName = "node" | "bun" | "deno";

/** Hono's `app.fetch`: the request, and the runtime's bindings as Hono's `env`. */
export type FetchHandler = (request: Request, env?: unknown) => Response | Promise<Response>;

export interface ServeOptions {
  fetch: FetchHandler;
  /** 0 picks a free port. */
  port: number;
  hostname: string;
}

export interface HttpServer {
  runtime: RuntimeName;
  /** The port actually bound. */
  port: number;
  /** The address actually bound (`0.0.0.0`, `::`, `127.0.0.1`, …), never a name. */
  address: string;
  /** Stops accepting connections; resolves when every request in flight has been answered. */
  close(): Promise<void>;
}

/** The part of `Bun.serve`'s API used here (Bun ≥ 1.1: `stop()` returns a promise). */
interface BunGlobal {
  version: string;
  serve(options: { port: number; hostname: string; development: boolean; fetch: FetchHandler }): {
    port: number;
    stop(closeActiveConnections?: boolean): Promise<void>;
  };
}

/** The part of `Deno.serve`'s API used here (Deno ≥ 1.38: `shutdown()`). */
interface DenoGlobal {
  version: { deno: string };
  serve(
    options: { port: number; hostname: string; onListen: (addr: { port: number }) => void },
    handler: FetchHandler,
  ): { addr: { port: number }; shutdown(): Promise<void> };
}

const runtimeGlobals = globalThis as { Bun?: BunGlobal; Deno?: DenoGlobal };

/** The runtime running this process. */
export function currentRuntime(): RuntimeName {
  if (runtimeGlobals.Bun) return "bun";
  if (runtimeGlobals.Deno) return "deno";
  return "node";
}

/** `node 20.19.0`, `bun 1.2.3`, `deno 2.1.0`: for the logs. */
export function runtimeDescription(): string {
  const { Bun, Deno } = runtimeGlobals;
  if (Bun) return `bun ${Bun.version}`;
  if (Deno) return `deno ${Deno.version.deno}`;
  return `node ${process.versions.node}`;
}

/**
 * Starts listening with the current runtime's own server.
 * @throws Error when the port cannot be bound (e.g. EADDRINUSE)
 */
export async function serveHttp(options: ServeOptions): Promise<HttpServer> {
  const { Bun, Deno } = runtimeGlobals;
  // The handler is wrapped so that no runtime-specific second argument (Bun's server, Deno's
  // connection info) reaches Hono as its `env`.
  const fetch: FetchHandler = (request) => options.fetch(request);
  if (Bun) {
    const server = Bun.serve({
      port: options.port,
      hostname: options.hostname,
      development: false,
      fetch,
    });
    return {
      runtime: "bun",
      port: server.port,
      address: options.hostname,
      close: () => server.stop(false),
    };
  }
  if (Deno) {
    // onListen replaces Deno's own "Listening on ..." line; the server logs its own.
    const server = Deno.serve(
      { port: options.port, hostname: options.hostname, onListen: () => {} },
      fetch,
    );
    return {
      runtime: "deno",
      port: server.addr.port,
      address: options.hostname,
      close: () => server.shutdown(),
    };
  }
  // On Node the adapter's bindings ({ incoming, outgoing }) do reach Hono: the body reader uses
  // the IncomingMessage directly (src/http/body.ts).
  return serveNode(options);
}

async function serveNode(options: ServeOptions): Promise<HttpServer> {
  // Imported lazily so that Bun and Deno never load the Node adapter.
  const { serve } = await import("@hono/node-server");
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve(
      { fetch: options.fetch, port: options.port, hostname: options.hostname },
      () => {
        s.off("error", reject);
        resolve(s as Server);
      },
    ) as Server;
    s.once("error", reject);
  });
  server.on("clientError", answerClientError);
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : options.port;
  const bound = typeof address === "object" && address ? address.address : options.hostname;
  const close = () =>
    new Promise<void>((resolve, reject) => {
      // close() stops accepting and closes idle keep-alive connections (Node ≥ 19); a
      // connection busy with a request becomes idle once answered, so idle ones are closed
      // again until the server has none left.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      sweep.unref();
      server.close((err) => {
        clearInterval(sweep);
        if (err) reject(err);
        else resolve();
      });
    });
  return { runtime: "node", port, address: bound, close };
}

/**
 * Answers a request that Node's HTTP parser refused before it reached the app, with the same
 * JSON error body as every other error (docs/api.md, "Errors"): 431 HEADERS_TOO_LARGE for a URL
 * or headers past Node's limit, 400 VALIDATION_ERROR for a malformed request. A connection that
 * is gone, or timed out, is closed without an answer.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const code = err.code ?? "";
  if (!socket.writable || !code.startsWith("HPE_")) {
    socket.destroy();
    return;
  }
  const error =
    code === "HPE_HEADER_OVERFLOW"
      ? new ApiError("HEADERS_TOO_LARGE", "The request's URL or headers are too large")
      : new ApiError("VALIDATION_ERROR", "Malformed HTTP request");
  const body = JSON.stringify(error.toBody());
  const reason = error.status === 431 ? "Request Header Fields Too Large" : "Bad Request";
  socket.end(
    `HTTP/1.1 ${error.status} ${reason}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
