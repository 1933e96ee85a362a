/**
 * Hrana over HTTP for the test server: `GET /v2` (and `/v1`, `/`), `GET /health`, and
 * `POST /v2/pipeline` (also `/v3/pipeline`; JSON only, no cursors, no protobuf). A pipeline
 * names its stream by a baton, which is good for one request only: each answer carries a new
 * one, or null once the stream is closed. Streams that sit idle longer than the server's idle
 * time are closed (their open transaction rolled back, the write lock given back), and so is
 * the stream of a request whose client went away before its answer.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { SharedDatabase } from "./database.ts";
import { HranaError, pipelineBodySchema, type StreamResponse, sqliteError } from "./proto.ts";
import { Stream } from "./stream.ts";

/** Largest pipeline body read, in bytes. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

type StreamResult = { type: "ok"; response: StreamResponse } | { type: "error"; error: object };

export class HttpStreams {
  readonly #db: SharedDatabase;
  readonly #idleMs: number;
  readonly #byBaton = new Map<string, Stream>();
  readonly #sweeper: NodeJS.Timeout;

  constructor(db: SharedDatabase, idleMs: number) {
    this.#db = db;
    this.#idleMs = idleMs;
    this.#sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(1000, idleMs / 4)));
    this.#sweeper.unref();
  }

  /** Streams open now (waiting for their next request). */
  get open(): number {
    return this.#byBaton.size;
  }

  /** Closes streams idle for longer than the idle time. */
  sweep(): void {
    const now = Date.now();
    for (const [baton, stream] of this.#byBaton) {
      if (!stream.busy && now - stream.lastUsedMs > this.#idleMs) {
        this.#byBaton.delete(baton);
        stream.close();
      }
    }
  }

  closeAll(): void {
    clearInterval(this.#sweeper);
    for (const stream of this.#byBaton.values()) stream.close();
    this.#byBaton.clear();
  }

  /** Answers one `POST …/pipeline`. */
  async pipeline(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Watched from the start: a client that went away while its body was read (a request the
    // server reads late, after a pause) would otherwise leave its stream, and a transaction
    // begun in it, open until the stream expires.
    let gone = false;
    let stream: Stream | undefined;
    res.on("close", () => {
      if (!res.writableFinished) {
        gone = true;
        stream?.close();
      }
    });
    let parsed: ReturnType<typeof pipelineBodySchema.safeParse>;
    try {
      parsed = pipelineBodySchema.safeParse(JSON.parse(await readBody(req)));
    } catch {
      return sendJson(res, 400, { message: "The body is not JSON", code: "PROTOCOL" });
    }
    if (!parsed.success) {
      return sendJson(res, 400, {
        message: `Malformed pipeline: ${parsed.error.message}`,
        code: "PROTOCOL",
      });
    }
    const { baton, requests } = parsed.data;
    if (baton != null) {
      const found = this.#byBaton.get(baton);
      if (!found) {
        return sendJson(res, 400, { message: "Unknown or expired baton", code: "STREAM_EXPIRED" });
      }
      // A baton is good for one request: a second use of it fails here.
      this.#byBaton.delete(baton);
      stream = found;
    } else {
      stream = new Stream(this.#db);
    }
    if (gone || res.destroyed) {
      stream.close();
      return;
    }
    this.#db.log?.({ event: "pipeline", stream: stream.id, requests: requests.map((r) => r.type) });
    const results: StreamResult[] = [];
    for (const request of requests) {
      try {
        results.push({ type: "ok", response: await stream.run(request) });
      } catch (err) {
        results.push({ type: "error", error: sqliteError(err).toBody() });
      }
    }
    if (gone) return;
    let nextBaton: string | null = null;
    if (!stream.closed) {
      nextBaton = `${stream.id}.${randomBytes(18).toString("base64url")}`;
      this.#byBaton.set(nextBaton, stream);
    }
    sendJson(res, 200, { baton: nextBaton, base_url: null, results });
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new HranaError("The body is too large", "PROTOCOL"));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** Writes `body` as JSON with `status`. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
  });
  res.end(text);
}
