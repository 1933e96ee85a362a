/**
 * Hrana over WebSocket for the test server: subprotocol `hrana2` (or `hrana1`), JSON text
 * frames. The client says `hello` (with the token when the server has one), then sends
 * `request`s: open_stream, close_stream, execute, batch, sequence, describe, store_sql,
 * close_sql, get_autocommit. Requests on one stream run in order; streams run side by side.
 * Stored SQL texts belong to the socket. Closing the socket closes its streams (rolling back
 * what they had open). Cursors (Hrana 3) are not offered, so clients fall back to version 2.
 */
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { z } from "zod";
import type { SharedDatabase } from "./database.ts";
import { HranaError, type StreamRequest, sqliteError, streamRequestSchema } from "./proto.ts";
import { Stream } from "./stream.ts";

const clientMsgSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("hello"), jwt: z.string().nullish() }),
  z.object({
    type: z.literal("request"),
    request_id: z.number().int(),
    request: z.record(z.string(), z.unknown()),
  }),
]);

const streamIdSchema = z.object({ stream_id: z.number().int() });
const storeSqlSchema = z.object({ sql_id: z.number().int(), sql: z.string() });
const closeSqlSchema = z.object({ sql_id: z.number().int() });

export class WsEndpoint {
  readonly #db: SharedDatabase;
  readonly #token: string | undefined;
  readonly #server = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => {
      for (const protocol of ["hrana2", "hrana1"]) if (offered.has(protocol)) return protocol;
      return false;
    },
  });
  readonly #sockets = new Set<WebSocket>();

  constructor(db: SharedDatabase, token: string | undefined) {
    this.#db = db;
    this.#token = token;
  }

  /** Takes over an HTTP upgrade request. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#server.handleUpgrade(req, socket, head, (ws) => this.#serve(ws));
  }

  closeAll(): void {
    for (const ws of this.#sockets) ws.terminate();
    this.#server.close();
  }

  #serve(ws: WebSocket): void {
    this.#sockets.add(ws);
    const streams = new Map<number, Stream>();
    const sqls = new Map<number, string>();
    let helloed = false;
    ws.on("close", () => {
      this.#sockets.delete(ws);
      for (const stream of streams.values()) stream.close();
      streams.clear();
    });
    ws.on("message", (data, isBinary) => {
      if (isBinary) return ws.close(1003, "only JSON text frames");
      let msg: z.infer<typeof clientMsgSchema>;
      try {
        msg = clientMsgSchema.parse(JSON.parse(data.toString()));
      } catch {
        return ws.close(1002, "malformed message");
      }
      if (msg.type === "hello") {
        if (this.#token !== undefined && msg.jwt !== this.#token) {
          ws.send(
            JSON.stringify({
              type: "hello_error",
              error: { message: "Unauthorized", code: "UNAUTHORIZED" },
            }),
          );
          return ws.close(1008, "unauthorized");
        }
        helloed = true;
        return ws.send(JSON.stringify({ type: "hello_ok" }));
      }
      if (!helloed) return ws.close(1002, "request before hello");
      const reply = (body: object) => {
        if (ws.readyState === ws.OPEN)
          ws.send(JSON.stringify({ request_id: msg.request_id, ...body }));
      };
      this.#request(msg.request, streams, sqls).then(
        (response) => reply({ type: "response_ok", response }),
        (err: unknown) => reply({ type: "response_error", error: sqliteError(err).toBody() }),
      );
    });
  }

  async #request(
    raw: Record<string, unknown>,
    streams: Map<number, Stream>,
    sqls: Map<number, string>,
  ): Promise<object> {
    switch (raw.type) {
      case "open_stream": {
        const { stream_id } = streamIdSchema.parse(raw);
        if (streams.has(stream_id)) throw new HranaError("Stream id in use", "PROTOCOL");
        streams.set(stream_id, new Stream(this.#db, sqls));
        return { type: "open_stream" };
      }
      case "close_stream": {
        const { stream_id } = streamIdSchema.parse(raw);
        const stream = streams.get(stream_id);
        streams.delete(stream_id);
        if (stream) await stream.run({ type: "close" });
        return { type: "close_stream" };
      }
      // Stored SQL texts are the socket's: kept at once, so later requests on any stream see them.
      case "store_sql": {
        const { sql_id, sql } = storeSqlSchema.parse(raw);
        sqls.set(sql_id, sql);
        return { type: "store_sql" };
      }
      case "close_sql":
        sqls.delete(closeSqlSchema.parse(raw).sql_id);
        return { type: "close_sql" };
      default: {
        const { stream_id } = streamIdSchema.parse(raw);
        const stream = streams.get(stream_id);
        if (!stream) throw new HranaError(`No stream ${stream_id}`, "STREAM_NOT_FOUND");
        const request: StreamRequest = streamRequestSchema.parse(raw);
        if (request.type === "close") throw new HranaError("Unknown request", "PROTOCOL");
        return stream.run(request);
      }
    }
  }
}
