/**
 * `verifyWebhook`: checks a delivery's Standard Webhooks signature with the `standardwebhooks`
 * library and returns the event, typed by the `webhooks` section of the service's OpenAPI
 * document (docs/api.md#verifying-a-delivery). The library's code path here is plain
 * JavaScript (HMAC-SHA256 by `fast-sha256`, base64 by `@stablelib/base64`, `TextEncoder`), so
 * this runs on Node 20+, Bun, Deno and browsers.
 */
import { Webhook } from "standardwebhooks";
import { parseExact } from "./exact-json.ts";
import type { webhooks } from "./openapi.ts";

/** Every event type the service sends. */
export type LedgerEventType = keyof webhooks;

/** The event of one type, `{id, type, createdAt, data}`, as the service sends it. */
export type LedgerEventOf<T extends LedgerEventType> =
  webhooks[T]["post"]["requestBody"]["content"]["application/json"];

/** Any event of the service: a union discriminated by `type`. */
export type LedgerEvent = { [T in LedgerEventType]: LedgerEventOf<T> }[LedgerEventType];

/**
 * The request headers of a delivery: a fetch `Headers` (Hono, Bun, Deno, Next.js, workers) or a
 * record of them (Node's `req.headers`, Express).
 */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/** A delivery that does not verify: its signature, its timestamp, or what it holds. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

/** The event types this client knows (a missing or an extra one fails the type check). */
const KNOWN_TYPES = {
  "balance.low": true,
  "reservation.expired": true,
  "credits.expired": true,
  "plan.granted": true,
  "spend_limit.reached": true,
  "transaction.reversed": true,
  "credits.purchased": true,
  "credits.clawed_back": true,
  "purchase.clawback_incomplete": true,
  "auto_topup.succeeded": true,
  "auto_topup.failed": true,
  "webhook.test": true,
} satisfies Record<LedgerEventType, true>;

/** The headers as the library reads them: names in lower case, one string each. */
function headerRecord(headers: WebhookHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers instanceof Headers) {
    headers.forEach((value, name) => {
      out[name.toLowerCase()] = value;
    });
    return out;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === "string") out[name.toLowerCase()] = value;
    // A repeated header (several signatures) becomes the one space-separated list.
    else if (Array.isArray(value)) out[name.toLowerCase()] = value.join(" ");
  }
  return out;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Whether `value` has the shape of an event of a type this client knows. */
function isLedgerEvent(value: unknown): value is LedgerEvent {
  return (
    isObject(value) &&
    typeof value.id === "string" &&
    typeof value.type === "string" &&
    Object.hasOwn(KNOWN_TYPES, value.type) &&
    typeof value.createdAt === "string" &&
    isObject(value.data)
  );
}

/**
 * Verifies a delivery and returns its event.
 * @param payload the request body exactly as received (the raw text or bytes, never re-encoded
 *   JSON: the signature covers the bytes)
 * @param headers the request's headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`)
 * @param secret the endpoint's secret, `whsec_…` (as `POST /v1/webhooks/create` answered it)
 * @returns the event, narrowed by `event.type`; amounts are `Amount`s (a `LosslessNumber`
 *   where a double would lose a digit)
 * @throws WebhookVerificationError when a header is missing, no signature matches, the
 *   timestamp is more than 5 minutes from the clock (the library's tolerance), or the verified
 *   body is not an event of a type this client knows; Error for a secret that is not base64
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secret: string,
): LedgerEvent {
  const text =
    typeof payload === "string"
      ? payload
      : new TextDecoder("utf-8", { fatal: true }).decode(payload);
  const webhook = new Webhook(secret);
  try {
    webhook.verify(text, headerRecord(headers), { jsonParse: false });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new WebhookVerificationError(message, { cause: err });
  }
  let event: unknown;
  try {
    event = parseExact(text);
  } catch (err) {
    throw new WebhookVerificationError("The body is not JSON", { cause: err });
  }
  if (!isLedgerEvent(event)) {
    throw new WebhookVerificationError("The body is not an event of a known type");
  }
  return event;
}
