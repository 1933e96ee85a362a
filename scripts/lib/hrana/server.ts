/**
 * A Hrana server for tests: serves one SQLite database file over Hrana's HTTP and WebSocket
 * variants, so that the service's remote libSQL mode (`DATABASE_URL=http://…`, `ws://…`) runs
 * against a real server in tests, the crash test and by hand. It stands in for sqld / Turso; it
 * is not one (docs/operations.md, "The Hrana test server", says what it does and does not do).
 *
 * Built on the `libsql` package; runs in its own process (scripts/hrana-server.ts), since a
 * synchronous driver in the service's own process would stall it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type LogEntry, SharedDatabase } from "./database.ts";
import { HttpStreams, sendJson } from "./http.ts";
import { WriteLock } from "./write-lock.ts";
import { WsEndpoint } from "./ws.ts";

export interface HranaServerOptions {
  /** The SQLite database file (created when missing). */
  path: string;
  /** Loopback address to listen on; default 127.0.0.1. */
  host?: string;
  /** 0 (default): a free port. */
  port?: number;
  /** When set, every request must carry `Authorization: Bearer TOKEN` (HTTP) or it in hello (WS). */
  token?: string | undefined;
  /** Seconds an HTTP stream may sit idle before it is closed (default 10, as sqld). */
  idleSeconds?: number;
  /** Milliseconds a writer waits for the write lock before SQLITE_BUSY (default 15000). */
  lockTimeoutMs?: number;
  /** PRAGMA synchronous of the server's connections (default FULL). */
  synchronous?: "FULL" | "NORMAL";
  /** Told about every pipeline and statement (for counting round trips). */
  log?: (entry: LogEntry) => void;
}

export interface HranaServer {
  /** `http://HOST:PORT` (the same port serves `ws://`). */
  url: string;
  port: number;
  /** HTTP streams open now. */
  openStreams: () => number;
  close: () => Promise<void>;
}

/** Starts a server. @returns once it listens */
export async function startHranaServer(options: HranaServerOptions): Promise<HranaServer> {
  const host = options.host ?? "127.0.0.1";
  const db = new SharedDatabase({
    path: options.path,
    lock: new WriteLock(),
    lockTimeoutMs: options.lockTimeoutMs ?? 15_000,
    synchronous: options.synchronous ?? "FULL",
    log: options.log,
  });
  const streams = new HttpStreams(db, (options.idleSeconds ?? 10) * 1000);
  const ws = new WsEndpoint(db, options.token);
  const authorized = (req: IncomingMessage) =>
    options.token === undefined || req.headers.authorization === `Bearer ${options.token}`;

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").replace(/\?.*$/, "");
    if (req.method === "GET" && path === "/health") return sendJson(res, 200, { status: "ok" });
    if (!authorized(req)) {
      return sendJson(res, 401, { message: "Unauthorized", code: "UNAUTHORIZED" });
    }
    if (req.method === "GET" && ["/", "/v1", "/v2"].includes(path)) {
      return sendJson(res, 200, { version: path === "/" ? "hrana" : path.slice(1) });
    }
    if (req.method === "POST" && /^\/v[23]\/pipeline$/.test(path)) {
      streams.pipeline(req, res).catch((err: unknown) => {
        if (!res.headersSent) {
          sendJson(res, 500, { message: String(err), code: "INTERNAL" });
        }
      });
      return;
    }
    sendJson(res, 404, { message: `No route ${req.method} ${path}`, code: "NOT_FOUND" });
  };

  const server: Server = createServer(handle);
  server.on("upgrade", (req, socket, head) => ws.upgrade(req, socket, head));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://${host}:${port}`,
    port,
    openStreams: () => streams.open,
    close: async () => {
      ws.closeAll();
      streams.closeAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.closeAll();
    },
  };
}
