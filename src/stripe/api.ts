/**
 * The service's calls to Stripe, through the official `stripe` library
 * (docs/api.md#selling-credits-through-stripe): the webhook signature check, and the API reads
 * a project's secret key allows, at `STRIPE_API_URL` (Stripe's own by default; a local fake in
 * tests).
 */
import Stripe from "stripe";
import { ApiError } from "../errors.ts";
import { type StripeEvent, stripeEventSchema } from "./objects.ts";

/** How far a signature's timestamp may lie from now, either way: 300 s, as Stripe's default. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

const invalidSignature = (why: string) =>
  new ApiError("INVALID_SIGNATURE", `Invalid Stripe-Signature: ${why}`);

/**
 * Checks `header` (Stripe-Signature) over the raw body `payload` as received, as the library's
 * `webhooks.constructEventAsync` checks it (HMAC-SHA256 of `timestamp.payload` keyed by the
 * whole `whsec_…` secret, any `v1=` may match, at most 300 s old at `nowMs`), and refuses a
 * timestamp more than 300 s ahead too; then reads the event's envelope.
 * @throws ApiError INVALID_SIGNATURE (missing, bad, stale or future signature); VALIDATION_ERROR
 *   when a signed body is not a Stripe event
 */
export async function verifiedEvent(
  payload: string,
  header: string | undefined,
  secret: string,
  nowMs: number,
): Promise<StripeEvent> {
  if (header === undefined || header === "") throw invalidSignature("missing");
  let parsed: unknown;
  try {
    parsed = await Stripe.webhooks.constructEventAsync(
      payload,
      header,
      secret,
      SIGNATURE_TOLERANCE_SECONDS,
      undefined,
      nowMs,
    );
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw invalidSignature(
      /tolerance/i.test(message) ? "the timestamp is too old" : "no signature matches",
    );
  }
  const t = /(?:^|,)\s*t=(\d+)/.exec(header)?.[1];
  if (t === undefined || Number(t) * 1000 > nowMs + SIGNATURE_TOLERANCE_SECONDS * 1000) {
    throw invalidSignature("the timestamp is too far ahead");
  }
  const event = stripeEventSchema.safeParse(parsed);
  if (!event.success) {
    throw new ApiError("VALIDATION_ERROR", "The signed body is not a Stripe event");
  }
  return event.data;
}

/**
 * A Stripe API client for `secretKey` at `apiUrl` (`STRIPE_API_URL`). `options`: the timeout
 * of one request (ms, default 10 s) and the library's own retries (default 2, each with the
 * same Idempotency-Key); the webhook route passes a short timeout and none, answering 503 for
 * Stripe to retry rather than keep its delivery waiting.
 */
export function stripeClient(
  secretKey: string,
  apiUrl: string,
  options: { timeoutMs?: number; retries?: number } = {},
): Stripe {
  const url = new URL(apiUrl);
  const protocol = url.protocol === "http:" ? "http" : "https";
  return new Stripe(secretKey, {
    host: url.hostname,
    port: url.port === "" ? (protocol === "http" ? 80 : 443) : Number(url.port),
    protocol,
    maxNetworkRetries: options.retries ?? 2,
    timeout: options.timeoutMs ?? 10_000,
  });
}

/**
 * The PaymentIntent that paid invoice `invoiceId` (read with the secret key from its payments:
 * Stripe API versions whose invoices no longer carry `payment_intent`), or null when none paid.
 * @throws the library's error when Stripe cannot be reached or refuses
 */
export async function invoicePaymentIntent(
  client: Stripe,
  invoiceId: string,
): Promise<string | null> {
  const payments = await client.invoicePayments.list({ invoice: invoiceId, limit: 10 });
  for (const p of payments.data) {
    if (p.status !== "paid") continue;
    const pi = p.payment.payment_intent;
    if (pi) return typeof pi === "string" ? pi : pi.id;
  }
  return null;
}
