/**
 * One HTTP attempt of a delivery (docs/api.md#delivery): the signed POST, sent to the address
 * that was checked (src/webhooks/targets.ts) and to no other. The connection is opened to that
 * IP address, with the URL's host kept in the `Host` header and, for `https`, as the TLS server
 * name (SNI and the certificate check), so nothing resolves the name a second time between the
 * check and the connection. Redirects are not followed; the answer's body is not read.
 */
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { Webhook } from "standardwebhooks";
import type { CheckedTarget } from "./targets.ts";

/** What one HTTP attempt gave: the status, if any answer came, and why it failed. */
export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
}

/** What an attempt sends: the event's id and exact JSON text, signed with the secret. */
export interface SignedEvent {
  eventId: string;
  payload: string;
  secret: string;
}

/**
 * POSTs the event to `target`, signed as Standard Webhooks says: `webhook-id` (the event id),
 * `webhook-timestamp` (Unix seconds now, by the wall clock, which the receiver checks against
 * its own) and `webhook-signature` (`v1,` + base64 HMAC-SHA256 of `id.timestamp.payload` with
 * the secret).
 * @param timeoutMs the attempt's budget, from the connection to the answer's status line
 * @param stopping aborts the attempt when the worker stops
 * @returns a 2xx as `ok`; anything else with its status or the reason no answer came
 *   (`timeout after N ms`, a system code such as `ECONNREFUSED`, `stopped`); never throws
 */
export async function postEvent(
  target: CheckedTarget,
  event: SignedEvent,
  timeoutMs: number,
  stopping?: AbortSignal,
): Promise<AttemptResult> {
  const sentAt = new Date();
  const signature = new Webhook(event.secret).sign(event.eventId, sentAt, event.payload);
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = stopping ? AbortSignal.any([timeout, stopping]) : timeout;
  const headers = {
    host: target.url.host,
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(event.payload)),
    "user-agent": "credit-ledger-webhooks/1",
    "webhook-id": event.eventId,
    "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
    "webhook-signature": signature,
  };
  try {
    const res = await send(target, headers, event.payload, signal);
    const status = res.statusCode ?? 0;
    res.destroy();
    const ok = status >= 200 && status < 300;
    return { ok, statusCode: status, error: ok ? null : `HTTP ${status}` };
  } catch (err) {
    if (timeout.aborted) {
      return { ok: false, statusCode: null, error: `timeout after ${timeoutMs} ms` };
    }
    if (stopping?.aborted) return { ok: false, statusCode: null, error: "stopped" };
    return { ok: false, statusCode: null, error: networkError(err) };
  }
}

/** Sends the request to the checked address. @returns the answer, once its head arrived */
function send(
  target: CheckedTarget,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const { url } = target;
  const secure = url.protocol === "https:";
  const options: RequestOptions & { servername?: string } = {
    host: target.address,
    family: target.family,
    port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
    path: `${url.pathname}${url.search}`,
    method: "POST",
    headers,
    signal,
    // A fresh connection per attempt: no socket opened for another address is reused.
    agent: false,
  };
  if (url.username !== "" || url.password !== "") {
    options.auth = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  }
  if (secure && isIP(target.hostname) === 0) options.servername = target.hostname;
  return new Promise((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(options, resolve);
    req.on("error", reject);
    req.end(body);
  });
}

/**
 * Why a request got no answer, as its system error code (`ECONNREFUSED`, `ECONNRESET`, …) or
 * the error's name: never its message, which may quote the URL (and a token in it).
 */
function networkError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string") return code;
    const cause = err.cause as { code?: unknown } | undefined;
    if (cause && typeof cause.code === "string") return cause.code;
    return err.name;
  }
  return "request failed";
}
