/**
 * The console's one way to the service: `GET`/`POST` on the public `/v1` API with the API key
 * of this tab (docs/operations.md#operator-console).
 *
 * - The key lives in the tab's `sessionStorage` only: never `localStorage`, a cookie, the URL
 *   or a log line. Closing the tab or `Sign out` forgets it.
 * - Responses are parsed with `lossless-json`: every JSON number stays a `LosslessNumber` holding
 *   the literal the service wrote, so amounts are shown digit for digit, never through a double.
 * - Request bodies are written the same way: an amount typed by the operator goes out as the
 *   literal typed.
 */
import { LosslessNumber, parse, stringify } from "lossless-json";

/** A JSON number as the service wrote it. `String(n)` is its literal. */
export type Num = LosslessNumber;

const KEY_ITEM = "credit-ledger.apiKey";

/** The API key of this tab, or null when signed out. */
export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY_ITEM, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
}

/**
 * An answer of the API that is not a 200, with the API's error `code`, `message` and `details`
 * (`{reversible}` of a reversal refused for its amount, docs/api.md#reversals).
 */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown;

  constructor(status: number, code: string, message: string, details?: unknown) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** The service's base URL: the folder of this page (`…/console` → `…/`), behind any prefix. */
function baseUrl(): URL {
  return new URL(".", document.baseURI);
}

export type Query = Record<string, string | number | boolean | undefined>;

/** `path` (relative, `v1/…`) with the defined entries of `query`. */
export function urlOf(path: string, query: Query = {}): URL {
  const url = new URL(path, baseUrl());
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) url.searchParams.set(name, String(value));
  }
  return url;
}

/** Called when the key is refused (401): the app signs out. */
let onUnauthorized: (err: ApiError) => void = () => {};

export function whenUnauthorized(handler: (err: ApiError) => void): void {
  onUnauthorized = handler;
}

function errorOf(status: number, body: unknown): ApiError {
  const error =
    body &&
    typeof body === "object" &&
    "error" in body &&
    body.error &&
    typeof body.error === "object"
      ? (body.error as { code?: unknown; message?: unknown; details?: unknown })
      : {};
  const code = typeof error.code === "string" ? error.code : `HTTP_${status}`;
  const message = typeof error.message === "string" ? error.message : `HTTP ${status}`;
  return new ApiError(status, code, message, error.details);
}

/**
 * Calls the API with `key` (default: this tab's). @returns the parsed 200 body
 * @throws ApiError on any other status (after telling the app about a 401)
 */
export async function call<T>(
  method: "GET" | "POST",
  path: string,
  options: { query?: Query; body?: unknown; key?: string; idempotencyKey?: string } = {},
): Promise<T> {
  const key = options.key ?? storedKey();
  const headers: Record<string, string> = { Accept: "application/json" };
  if (key !== null) headers["X-API-Key"] = key;
  if (options.idempotencyKey) headers["Idempotency-Key"] = options.idempotencyKey;
  let body: string | undefined;
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = stringify(options.body) ?? undefined;
  }
  const res = await fetch(urlOf(path, options.query), {
    method,
    headers,
    body,
    credentials: "omit",
    cache: "no-store",
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch {
    parsed = undefined;
  }
  if (res.status !== 200) {
    const err = errorOf(res.status, parsed);
    if (res.status === 401 && options.key === undefined) onUnauthorized(err);
    throw err;
  }
  return parsed as T;
}

/**
 * Downloads an export (`v1/transactions/export`, `v1/usage/export`; docs/api.md#exports) as a
 * file. The key goes in the `X-API-Key` header of a `fetch`, never in a URL, so the file cannot
 * be a plain link: the answer is read into a Blob and saved through an object URL, under the
 * name the service's `Content-Disposition` gives.
 * @returns the file's name
 * @throws ApiError on any answer but 200 (after telling the app about a 401)
 */
export async function download(path: string, query: Query): Promise<string> {
  const key = storedKey();
  const headers: Record<string, string> = {};
  if (key !== null) headers["X-API-Key"] = key;
  const res = await fetch(urlOf(path, query), { headers, credentials: "omit", cache: "no-store" });
  if (res.status !== 200) {
    let parsed: unknown;
    try {
      parsed = parse(await res.text());
    } catch {
      parsed = undefined;
    }
    const err = errorOf(res.status, parsed);
    if (res.status === 401) onUnauthorized(err);
    throw err;
  }
  const blob = await res.blob();
  const disposition = res.headers.get("Content-Disposition") ?? "";
  const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? "export";
  const href = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = href;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  // The browser has taken the file once the click's task has run.
  setTimeout(() => URL.revokeObjectURL(href), 1000);
  return name;
}

/** A fresh `Idempotency-Key`: 128 random bits (works outside secure contexts too). */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** An amount typed by the operator, as a JSON number literal (validated by the API). */
export function amountLiteral(text: string): LosslessNumber | null {
  const trimmed = text.trim();
  return /^\d+(\.\d+)?$/.test(trimmed) ? new LosslessNumber(trimmed) : null;
}

/** A small whole number of the API (a count, an offset) as a JS number. */
export function int(n: Num | number): number {
  return typeof n === "number" ? n : Number(n.value);
}

/**
 * What the failure of a confirmed write means: an API answer is definite (nothing was applied,
 * and a new attempt gets a new Idempotency-Key); no answer keeps the key, so that confirming
 * again resends the same request, which applies at most once.
 */
export function writeFailure(err: unknown): { definite: boolean; error: Error } {
  if (err instanceof ApiError) return { definite: true, error: err };
  return {
    definite: false,
    error: new Error(
      "No answer from the service. Confirm again to resend the same request (same Idempotency-Key): it applies at most once.",
    ),
  };
}
