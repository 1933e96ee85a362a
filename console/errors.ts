/**
 * The API's errors as sentences for a person (contract section 16): each `ErrorCode` of the
 * service (src/errors.ts, docs/api.md#errors) says what happened and what to do, instead of its
 * raw code. The API's own message follows as a detail where it adds something (which field,
 * which id); the code stays out of sight, in the alert's `data-code`.
 *
 * No import of the service's code here (it runs in Node, this in the browser):
 * test/console-errors.test.ts checks that every `ErrorCode` has its sentence, and no other.
 */

interface Explained {
  /** What happened, for the operator. */
  sentence: string;
  /** Whether the API's message says more than the sentence (a field, an id, a figure). */
  detail: boolean;
}

/** Every error code of the API, with its sentence. */
export const ERROR_SENTENCES = {
  VALIDATION_ERROR: { sentence: "The service could not accept what was sent.", detail: true },
  UNAUTHORIZED: {
    sentence: "This API key was not accepted: it is wrong, or it was revoked.",
    detail: false,
  },
  INSUFFICIENT_CREDITS: {
    sentence: "The account does not have enough available credits for this.",
    detail: true,
  },
  SPEND_LIMIT_EXCEEDED: {
    sentence: "A spend limit of the account refuses this until its window resets.",
    detail: true,
  },
  ACCOUNT_NOT_FOUND: {
    sentence: "There is no such account in this project.",
    detail: true,
  },
  RESERVATION_NOT_FOUND: {
    sentence: "There is no such reservation in this project.",
    detail: true,
  },
  PLAN_NOT_FOUND: { sentence: "There is no such plan in this project.", detail: true },
  ACCOUNT_PLAN_NOT_FOUND: {
    sentence: "There is no such plan assignment in this project.",
    detail: true,
  },
  TRANSACTION_NOT_FOUND: {
    sentence: "There is no such transaction in this project.",
    detail: true,
  },
  MODEL_NOT_FOUND: { sentence: "The model catalog has no such model.", detail: true },
  WEBHOOK_NOT_FOUND: {
    sentence: "This webhook endpoint no longer exists (it may have been deleted).",
    detail: false,
  },
  DELIVERY_NOT_FOUND: {
    sentence: "This delivery no longer exists (old deliveries are removed after a while).",
    detail: false,
  },
  NOT_FOUND: { sentence: "The service has no such page or route.", detail: true },
  DUPLICATE_EXTERNAL_ID: {
    sentence: "Another account of this project already uses that external id.",
    detail: true,
  },
  RESERVATION_NOT_PENDING: {
    sentence: "This reservation has already ended, so it cannot be changed.",
    detail: true,
  },
  PLAN_INACTIVE: { sentence: "This plan is archived and cannot be assigned.", detail: false },
  ACCOUNT_PLAN_NOT_ACTIVE: {
    sentence: "This plan assignment has already ended.",
    detail: false,
  },
  BALANCE_LIMIT_EXCEEDED: {
    sentence: "This would take the balance over the largest one allowed, 9,000,000,000 credits.",
    detail: false,
  },
  IDEMPOTENCY_KEY_REUSED: {
    sentence:
      "This request's Idempotency-Key was already used for a different request: nothing was changed. Try again.",
    detail: false,
  },
  BATCH_ABORTED: {
    sentence: "Nothing of the batch was applied, because one of its operations failed.",
    detail: false,
  },
  WEBHOOK_LIMIT_REACHED: {
    sentence: "The project has as many active webhook endpoints as it may: delete one first.",
    detail: true,
  },
  DELIVERY_NOT_FAILED: {
    sentence: "Only a failed delivery can be retried; this one has not failed.",
    detail: true,
  },
  NOT_REVERSIBLE: {
    sentence: "An expiry, a transfer or a reversal cannot be reversed.",
    detail: false,
  },
  REVERSAL_EXCEEDS_ORIGINAL: {
    sentence: "Its reversals would add up to more than the transaction itself.",
    detail: true,
  },
  REVERSAL_EXCEEDS_REMAINING: {
    sentence: "That is more than can still be reversed (what is left of its grant, or available).",
    detail: true,
  },
  ACCOUNT_BUSY: {
    sentence:
      "The account cannot change its place now: something is held below it, or it still has credits or a plan.",
    detail: true,
  },
  FUNDED_BY_PARENT: {
    sentence: "This account is paid for by the account above it: it holds no credits of its own.",
    detail: true,
  },
  DUPLICATE_STRIPE_CUSTOMER: {
    sentence: "Another account already has this Stripe customer.",
    detail: true,
  },
  STRIPE_NOT_CONFIGURED: {
    sentence:
      "Stripe is not set up for this: the project needs its Stripe key and credit price, and the account its Stripe customer.",
    detail: true,
  },
  INVALID_SIGNATURE: {
    sentence: "The Stripe signature of this request did not match.",
    detail: false,
  },
  METHOD_NOT_ALLOWED: {
    sentence: "The service does not take this kind of request here.",
    detail: true,
  },
  PAYLOAD_TOO_LARGE: { sentence: "What was sent is too large for the service.", detail: false },
  HEADERS_TOO_LARGE: {
    sentence: "The request's address or headers are too large for the service.",
    detail: false,
  },
  UNSUPPORTED_MEDIA_TYPE: {
    sentence: "The service could not read the request's format.",
    detail: true,
  },
  INTERNAL_ERROR: {
    sentence: "The service failed unexpectedly. Nothing was changed; try again later.",
    detail: false,
  },
  SERVICE_UNAVAILABLE: {
    sentence: "The service is unavailable for now (nothing was changed). Try again in a moment.",
    detail: true,
  },
} as const satisfies Record<string, Explained>;

/** The API's error codes the console knows. */
export type KnownErrorCode = keyof typeof ERROR_SENTENCES;

/** Whether `code` is one of the API's error codes. */
function isKnown(code: string): code is KnownErrorCode {
  return Object.hasOwn(ERROR_SENTENCES, code);
}

/** An error as shown: a sentence, and the API's message when it adds something. */
export interface ExplainedError {
  sentence: string;
  detail: string | undefined;
  code: string | undefined;
}

/**
 * An answer of the API that is not a 200, for a person: a known `code` by its sentence (with
 * the API's `message` as the detail where it says more), any other by its HTTP `status`.
 */
export function explainApiError(code: string, status: number, message: string): ExplainedError {
  if (!isKnown(code)) {
    return {
      sentence: `The service answered with an error (HTTP status ${status}).`,
      detail: message === `HTTP ${status}` ? undefined : message,
      code,
    };
  }
  const { sentence, detail } = ERROR_SENTENCES[code];
  return { sentence, detail: detail ? message : undefined, code };
}

/**
 * An error of the console itself, for a person: a failed `fetch` (the service out of reach)
 * as a sentence, any other by its message, which the console writes as a sentence.
 */
export function explainOtherError(error: Error): ExplainedError {
  const unreachable = error instanceof TypeError && /fetch/i.test(error.message);
  return {
    sentence: unreachable
      ? "The service could not be reached. Check the connection and try again."
      : error.message,
    detail: undefined,
    code: undefined,
  };
}
