/**
 * The typed client of the credit ledger (`import { createLedgerClient, verifyWebhook } from
 * "credit-ledger/client"`; docs/api.md#typed-client): an `openapi-fetch` client typed by the
 * service's own OpenAPI document that never rounds an amount, and the check of a webhook
 * delivery's signature that returns the event typed by its `type`, and exact arithmetic on its
 * amounts (`toMicros`, `fromMicros`, `compareAmounts`, `addAmounts`, `subtractAmounts`). Also
 * packed on its own as `credit-ledger-client` (`npm run pack:client`). No Node-only API: it runs
 * on Node 20+, Bun, Deno and in browsers.
 */
export { isLosslessNumber, LosslessNumber } from "lossless-json";
export {
  type AmountInput,
  addAmounts,
  compareAmounts,
  fromMicros,
  subtractAmounts,
  toMicros,
} from "./amounts.ts";
export { createLedgerClient, type LedgerClient, type LedgerClientOptions } from "./client.ts";
export type {
  Amount,
  components,
  LosslessAmount,
  operations,
  paths,
  webhooks,
} from "./openapi.ts";
export {
  type LedgerEvent,
  type LedgerEventOf,
  type LedgerEventType,
  verifyWebhook,
  type WebhookHeaders,
  WebhookVerificationError,
} from "./webhooks.ts";
