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
