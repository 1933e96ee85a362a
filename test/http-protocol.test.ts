/**
 * Requests that Node's HTTP parser refuses before they reach the app still get the API's JSON
 * error body (docs/api.md#content-type-and-encoding): 431 for a URL or headers past the limit,
 * 400 for a request that is not HTTP.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeLedger, type TestLedger } from "./harness.ts";

let t: TestLedger;
let port: number;

/** Sends `raw` on a fresh connection and resolves with everything the server wrote back. */
function exchange(raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(raw));
    let answer = "";
    socket.on("data", (chunk) => {
      answer += chunk.toString();
    });
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
    socket.setTimeout(5000, () => {
      socket.destroy();
      reject(new Error(`no answer; got ${JSON.stringify(answer)}`));
    });
  });
}

/** The status line and the JSON body of a raw HTTP answer. */
function parse(answer: string): { statusLine: string; body: unknown } {
  const [head = "", body = ""] = answer.split("\r\n\r\n");
  return { statusLine: head.split("\r\n")[0] ?? "", body: JSON.parse(body) };
}

beforeAll(async () => {
  t = await makeLedger();
  port = Number(new URL(await t.listen()).port);
});
afterAll(async () => {
  await t.close();
});

describe("protocol errors answered by the HTTP server itself", () => {
  it("answers a request line that is not HTTP with 400 and the JSON error body", async () => {
    const { statusLine, body } = parse(await exchange("NOT HTTP AT ALL\r\n\r\n"));
    expect(statusLine).toBe("HTTP/1.1 400 Bad Request");
    expect(body).toEqual({
      success: false,
      error: { code: "VALIDATION_ERROR", message: "Malformed HTTP request" },
    });
  });

  it("answers a header block past the limit with 431 HEADERS_TOO_LARGE", async () => {
    const raw = `GET /v1/accounts HTTP/1.1\r\nHost: x\r\nX-Big: ${"b".repeat(20_000)}\r\n\r\n`;
    const { statusLine, body } = parse(await exchange(raw));
    expect(statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(body).toMatchObject({ success: false, error: { code: "HEADERS_TOO_LARGE" } });
  });
});

/** A chunked POST of `chunks` to `path` with the ledger's key, the connection closed after. */
function chunkedPost(path: string, chunks: string[]): string {
  const head =
    `POST ${path} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${t.key}\r\n` +
    "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  const body = chunks.map((c) => `${Buffer.byteLength(c).toString(16)}\r\n${c}\r\n`).join("");
  return `${head}${body}0\r\n\r\n`;
}

describe("request bodies read from the stream (no Content-Length)", () => {
  it("joins a body sent in several chunks", async () => {
    const text = JSON.stringify({ externalId: "chunked", name: "In pieces" });
    const pieces = [text.slice(0, 5), text.slice(5, 17), text.slice(17)];
    const { statusLine, body } = parse(await exchange(chunkedPost("/v1/accounts/create", pieces)));
    expect(statusLine).toBe("HTTP/1.1 200 OK");
    expect(body).toMatchObject({
      success: true,
      account: { externalId: "chunked", name: "In pieces" },
    });
  });

  it("answers a chunked body past 64 KiB with 413 and creates nothing", async () => {
    const text = JSON.stringify({ externalId: "too-big", metadata: { pad: "x".repeat(70_000) } });
    const pieces = [text.slice(0, 30_000), text.slice(30_000, 60_000), text.slice(60_000)];
    const { statusLine, body } = parse(await exchange(chunkedPost("/v1/accounts/create", pieces)));
    expect(statusLine).toBe("HTTP/1.1 413 Payload Too Large");
    expect(body).toEqual({
      success: false,
      error: { code: "PAYLOAD_TOO_LARGE", message: expect.any(String) },
    });
    const found = await t.api("GET", "/v1/accounts/get?accountId=too-big");
    expect(found.status).toBe(404);
  });

  it("changes nothing when the client leaves in the middle of a body, and goes on serving", async () => {
    const head =
      `POST /v1/accounts/create HTTP/1.1\r\nHost: x\r\nX-API-Key: ${t.key}\r\n` +
      "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n";
    await new Promise<void>((resolve, reject) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.write(`${head}{"externalId":"left-early"`, () =>
          setTimeout(() => {
            socket.destroy();
            resolve();
          }, 50),
        );
      });
      socket.on("error", reject);
    });
    const found = await t.api("GET", "/v1/accounts/get?accountId=left-early");
    expect(found.status).toBe(404);
    const { statusLine } = parse(
      await exchange(chunkedPost("/v1/accounts/create", ['{"externalId":"after-leave"}'])),
    );
    expect(statusLine).toBe("HTTP/1.1 200 OK");
  });
});
