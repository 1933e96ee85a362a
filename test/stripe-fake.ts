/**
 * A fake of Stripe's HTTP API for tests: a real node:http server on 127.0.0.1 (a random port)
 * that speaks what the official `stripe` library sends (form-encoded bodies with `a[b]=c` and
 * `expand[0]=x`, a Bearer secret key, an `Idempotency-Key` on every POST) and answers with
 * Stripe-shaped JSON objects, lists and errors (`{error: {type, code, message, decline_code?}}`
 * with a 4xx). Tests seed the objects it serves (`fake.charges.set(id, object)` …), program how
 * each new PaymentIntent ends (succeeds, is declined, stays processing, hangs, or answers late),
 * and read back every request it received. A POST repeated with the same `Idempotency-Key` and
 * the same body gets the stored answer again and creates nothing; while the first is still in
 * progress it is a 409 `idempotency_key_in_use`; with another body it is a 400
 * `idempotency_error`, as Stripe answers. A hanging request whose client has gone completes
 * without it, as Stripe's do, so a retry after a crash gets its PaymentIntent. The service under test is pointed at it with
 * `STRIPE_API_URL`. Nothing here reaches the network beyond the loopback address.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A Stripe object as JSON: `{id, object, …}`. */
export type StripeObject = Record<string, unknown> & { id: string; object?: string };

/** One request the fake received, as it arrived. */
export interface RecordedRequest {
  method: string;
  /** The path without the query string, e.g. `/v1/charges/ch_1`. */
  path: string;
  /** The query string, parsed as Stripe parses it (nested objects, arrays). */
  query: Record<string, unknown>;
  /** The form body, parsed the same way (`{}` for none). */
  body: Record<string, unknown>;
  /** The raw body as received. */
  rawBody: string;
  /** The headers, names in lower case. */
  headers: Record<string, string>;
  /** The status the fake answered (undefined while it has not answered, or never will). */
  status?: number;
  /** True when the answer was the stored answer of an earlier request with the same key. */
  replayed: boolean;
}

/** A Stripe error answer: the HTTP status and the `error` object. */
export interface StripeErrorAnswer {
  status: number;
  error: { type: string; code?: string; message: string; decline_code?: string; param?: string };
}

/**
 * How a created PaymentIntent ends: `succeed`; `decline` (402 `card_error`, `code` default
 * `card_declined`, `declineCode` default `generic_decline`, null for none); `processing` (200,
 * the PaymentIntent left `processing`, as a bank debit answers); `hang` (the PaymentIntent is
 * created in the fake and the request is never answered; once its client has gone, the socket
 * closed, the PaymentIntent completes as succeeded and that answer is stored under the request's
 * Idempotency-Key, as Stripe finishes a request whose client went away, so a retry with the same
 * key and body gets it); any of the first two after `delayMs`, or once `until` has settled (a
 * test's gate: the request is in progress meanwhile, so a retry with its key is a 409
 * `idempotency_key_in_use`).
 */
export type IntentOutcome =
  | { result: "succeed"; delayMs?: number; until?: Promise<unknown> }
  | {
      result: "decline";
      code?: string;
      declineCode?: string | null;
      message?: string;
      delayMs?: number;
      until?: Promise<unknown>;
    }
  | { result: "processing" }
  | { result: "hang" };

/** A programmed failure of the next matching requests. */
export interface Fault {
  method: string;
  /** A path prefix (`/v1/payment_intents`) or a pattern. */
  path: string | RegExp;
  /** How many matching requests fail (default 1). */
  times?: number;
  answer: StripeErrorAnswer;
}

export interface StripeFake {
  /** The base URL (`http://127.0.0.1:PORT`): STRIPE_API_URL. */
  url: string;
  port: number;
  /** Every request, in arrival order. */
  requests: RecordedRequest[];
  /** The requests whose path starts with `prefix` (and, given, of `method`). */
  requestsTo(prefix: string, method?: string): RecordedRequest[];
  /**
   * The secret key the fake accepts; undefined (the default) accepts any `sk_…` or `rk_…` key.
   * Another key is a 401 as Stripe answers it.
   */
  secretKey: string | undefined;
  charges: Map<string, StripeObject>;
  invoices: Map<string, StripeObject>;
  /** InvoicePayment objects by the id of their invoice. */
  invoicePayments: Map<string, StripeObject[]>;
  customers: Map<string, StripeObject>;
  paymentIntents: Map<string, StripeObject>;
  paymentMethods: Map<string, StripeObject>;
  refunds: Map<string, StripeObject>;
  disputes: Map<string, StripeObject>;
  checkoutSessions: Map<string, StripeObject>;
  /** Outcomes of the next created PaymentIntents, first used first. */
  intentOutcomes: IntentOutcome[];
  /** The outcome once `intentOutcomes` is empty (default: succeed). */
  defaultIntentOutcome: IntentOutcome;
  /** Failures of the next matching requests, checked before anything else. */
  faults: Fault[];
  /** Answers stored by Idempotency-Key. */
  idempotency: Map<string, { body: string; status: number; json: unknown }>;
  /** The time of created objects (epoch ms; default the wall clock): a test's fake clock. */
  now: () => number;
  /** Called with each PaymentIntent the fake creates, once it is stored (before answering). */
  onIntentCreated?: (intent: StripeObject) => void;
  /** Requests accepted and not (yet) answered: hanging ones and delayed ones. */
  pending(): number;
  /**
   * Completes PaymentIntent `id` as succeeded (its amount received, a succeeded Charge as its
   * `latest_charge`), as Stripe does when a payment that was processing goes through.
   * @returns the PaymentIntent
   */
  succeedIntent(id: string): StripeObject;
  close(): Promise<void>;
}

/** A new Stripe-style id with `prefix` (`pi`, `ch`, …). */
export function stripeId(prefix: string): string {
  return `${prefix}_test_${randomBytes(9).toString("hex")}`;
}

/**
 * Parses a form-encoded string as Stripe does: `a[b]=c` nests, `a[0]=x` and `a[]=x` make arrays.
 */
export function parseStripeForm(text: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const head = /^[^[]*/.exec(rawKey)?.[0] ?? rawKey;
    const parts = [
      head,
      ...[...rawKey.slice(head.length).matchAll(/\[([^\]]*)\]/g)].map((m) => m[1] ?? ""),
    ];
    let node: Record<string, unknown> | unknown[] = root;
    parts.forEach((part, i) => {
      const last = i === parts.length - 1;
      const nextIsIndex = !last && /^\d*$/.test(parts[i + 1] ?? "");
      const container = node as Record<string, unknown> & unknown[];
      const key = Array.isArray(node) ? (part === "" ? node.length : Number(part)) : part;
      if (last) {
        (container as Record<string | number, unknown>)[key] = value;
        return;
      }
      let child = (container as Record<string | number, unknown>)[key];
      if (child === undefined || typeof child !== "object" || child === null) {
        child = nextIsIndex ? [] : {};
        (container as Record<string | number, unknown>)[key] = child;
      }
      node = child as Record<string, unknown> | unknown[];
    });
  }
  return root;
}

/** The `expand` parameter of a request as a list of paths. */
function expandsOf(params: Record<string, unknown>): string[] {
  const e = params.expand;
  if (Array.isArray(e)) return e.filter((x): x is string => typeof x === "string");
  if (e && typeof e === "object") return Object.values(e).filter((x) => typeof x === "string");
  return typeof e === "string" ? [e] : [];
}

/** A Stripe list object. */
export function stripeList(url: string, data: unknown[], hasMore = false) {
  return { object: "list", data, has_more: hasMore, url };
}

/** The 404 Stripe answers for an unknown object. */
function missing(kind: string, id: string, param = "id"): StripeErrorAnswer {
  return {
    status: 404,
    error: {
      type: "invalid_request_error",
      code: "resource_missing",
      param,
      message: `No such ${kind}: '${id}'`,
    },
  };
}

function invalid(message: string, param?: string): StripeErrorAnswer {
  return {
    status: 400,
    error: { type: "invalid_request_error", message, ...(param ? { param } : {}) },
  };
}

/** Starts the fake on a random loopback port. */
export async function startStripeFake(): Promise<StripeFake> {
  const open = new Set<ServerResponse>();
  const inFlightKeys = new Set<string>();
  const fake: StripeFake = {
    url: "",
    port: 0,
    requests: [],
    requestsTo: (prefix, method) =>
      fake.requests.filter(
        (r) => r.path.startsWith(prefix) && (method === undefined || r.method === method),
      ),
    secretKey: undefined,
    charges: new Map(),
    invoices: new Map(),
    invoicePayments: new Map(),
    customers: new Map(),
    paymentIntents: new Map(),
    paymentMethods: new Map(),
    refunds: new Map(),
    disputes: new Map(),
    checkoutSessions: new Map(),
    intentOutcomes: [],
    defaultIntentOutcome: { result: "succeed" },
    faults: [],
    idempotency: new Map(),
    now: Date.now,
    pending: () => open.size,
    succeedIntent: (id) => {
      const intent = fake.paymentIntents.get(id);
      if (!intent) throw new Error(`no PaymentIntent ${id} in the fake`);
      succeed(intent);
      return intent;
    },
    close: async () => {
      for (const res of open) res.socket?.destroy();
      open.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  /** Every object the fake knows by id, for `expand`. */
  const anyObject = (id: string): StripeObject | undefined => {
    for (const map of [
      fake.charges,
      fake.invoices,
      fake.customers,
      fake.paymentIntents,
      fake.paymentMethods,
      fake.refunds,
      fake.disputes,
      fake.checkoutSessions,
    ]) {
      const found = map.get(id);
      if (found) return found;
    }
    return undefined;
  };

  /** A copy of `object` with its `expand` paths replaced by the objects they name. */
  const expanded = (object: StripeObject, expand: string[]): StripeObject => {
    const copy = structuredClone(object);
    for (const path of expand) {
      const parts = path.split(".");
      let node: Record<string, unknown> | undefined = copy;
      for (const [i, part] of parts.entries()) {
        if (!node) break;
        const value: unknown = node[part];
        if (i === parts.length - 1) {
          if (typeof value === "string") node[part] = structuredClone(anyObject(value) ?? value);
          if (part === "payments" && copy.object === "invoice") {
            node[part] = stripeList(
              `/v1/invoice_payments?invoice=${copy.id}`,
              fake.invoicePayments.get(copy.id) ?? [],
            );
          }
        } else {
          node =
            value && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
        }
      }
    }
    return copy;
  };

  const retrieve = (
    map: Map<string, StripeObject>,
    kind: string,
    id: string,
    params: Record<string, unknown>,
  ): [number, unknown] => {
    const found = map.get(id);
    if (!found) {
      const m = missing(kind, id);
      return [m.status, { error: m.error }];
    }
    return [200, expanded(found, expandsOf(params))];
  };

  const list = (
    url: string,
    items: StripeObject[],
    params: Record<string, unknown>,
  ): [number, unknown] => {
    const limit = Math.min(100, Math.max(1, Number(params.limit ?? 10) || 10));
    const after = typeof params.starting_after === "string" ? params.starting_after : undefined;
    const start = after ? items.findIndex((x) => x.id === after) + 1 : 0;
    const page = items.slice(start, start + limit);
    return [
      200,
      stripeList(
        url,
        page.map((x) =>
          expanded(
            x,
            expandsOf(params).map((e) => e.replace(/^data\./, "")),
          ),
        ),
        start + limit < items.length,
      ),
    ];
  };

  /** Marks `intent` succeeded with a succeeded Charge of its whole amount. */
  const succeed = (intent: StripeObject) => {
    if (intent.status === "succeeded") return;
    const charge = stripeId("ch");
    const amount = intent.amount as number;
    Object.assign(intent, {
      status: "succeeded",
      amount_received: amount,
      latest_charge: charge,
    });
    fake.charges.set(charge, {
      id: charge,
      object: "charge",
      amount,
      amount_captured: amount,
      amount_refunded: 0,
      currency: intent.currency,
      customer: intent.customer,
      payment_intent: intent.id,
      payment_method: intent.payment_method,
      paid: true,
      captured: true,
      refunded: false,
      disputed: false,
      status: "succeeded",
      metadata: intent.metadata,
      created: intent.created,
      livemode: false,
    });
  };

  /** Creates (and maybe confirms) a PaymentIntent as `POST /v1/payment_intents` does. */
  const createIntent = (
    params: Record<string, unknown>,
  ): { answer: [number, unknown]; outcome: IntentOutcome } | StripeErrorAnswer => {
    const amount = Number(params.amount);
    if (!Number.isInteger(amount) || amount < 1) return invalid("Invalid integer", "amount");
    if (typeof params.currency !== "string") {
      return invalid("Missing required param: currency.", "currency");
    }
    const customer = typeof params.customer === "string" ? params.customer : null;
    if (customer && !fake.customers.has(customer)) return missing("customer", customer, "customer");
    let paymentMethod = typeof params.payment_method === "string" ? params.payment_method : null;
    if (paymentMethod && !fake.paymentMethods.has(paymentMethod)) {
      return missing("PaymentMethod", paymentMethod, "payment_method");
    }
    if (!paymentMethod && customer) {
      const settings = fake.customers.get(customer)?.invoice_settings as
        | { default_payment_method?: unknown }
        | undefined;
      if (typeof settings?.default_payment_method === "string") {
        paymentMethod = settings.default_payment_method;
      }
    }
    const outcome = fake.intentOutcomes.shift() ?? fake.defaultIntentOutcome;
    const id = stripeId("pi");
    const created = Math.floor(fake.now() / 1000);
    const confirm = params.confirm === "true";
    const intent: StripeObject = {
      id,
      object: "payment_intent",
      amount,
      amount_received: 0,
      amount_capturable: 0,
      currency: params.currency,
      customer,
      payment_method: paymentMethod,
      metadata: (params.metadata as Record<string, string> | undefined) ?? {},
      description: params.description ?? null,
      confirmation_method: "automatic",
      capture_method: "automatic",
      created,
      livemode: false,
      latest_charge: null,
      last_payment_error: null,
      status: confirm ? "processing" : "requires_confirmation",
    };
    fake.paymentIntents.set(id, intent);
    if (confirm && outcome.result === "succeed") succeed(intent);
    if (confirm && outcome.result === "decline") {
      const charge = stripeId("ch");
      const declineCode =
        outcome.declineCode === null
          ? {}
          : { decline_code: outcome.declineCode ?? "generic_decline" };
      const error = {
        type: "card_error",
        code: outcome.code ?? "card_declined",
        ...declineCode,
        message: outcome.message ?? "Your card was declined.",
        charge,
      };
      Object.assign(intent, {
        status: "requires_payment_method",
        latest_charge: charge,
        last_payment_error: { ...error, payment_method: paymentMethod },
      });
      fake.charges.set(charge, {
        id: charge,
        object: "charge",
        amount,
        amount_captured: 0,
        amount_refunded: 0,
        currency: params.currency,
        customer,
        payment_intent: id,
        paid: false,
        captured: false,
        refunded: false,
        disputed: false,
        status: "failed",
        failure_code: error.code,
        failure_message: error.message,
        metadata: intent.metadata,
        created,
        livemode: false,
      });
      fake.onIntentCreated?.(intent);
      return {
        answer: [402, { error: { ...error, payment_intent: structuredClone(intent) } }],
        outcome,
      };
    }
    fake.onIntentCreated?.(intent);
    return { answer: [200, structuredClone(intent)], outcome };
  };

  /** Routes one request. @returns the answer, or a PaymentIntent's programmed outcome */
  const route = (
    method: string,
    path: string,
    params: Record<string, unknown>,
  ): { answer: [number, unknown]; outcome?: IntentOutcome } => {
    const asError = (e: StripeErrorAnswer): { answer: [number, unknown] } => ({
      answer: [e.status, { error: e.error }],
    });
    const one = /^\/v1\/([a-z_]+)\/([^/]+)$/.exec(path);
    const get = method === "GET";
    if (get && one) {
      const [, kind, id = ""] = one;
      const byKind: Record<string, [Map<string, StripeObject>, string]> = {
        charges: [fake.charges, "charge"],
        invoices: [fake.invoices, "invoice"],
        customers: [fake.customers, "customer"],
        payment_intents: [fake.paymentIntents, "payment_intent"],
        payment_methods: [fake.paymentMethods, "PaymentMethod"],
        refunds: [fake.refunds, "refund"],
        disputes: [fake.disputes, "dispute"],
      };
      const entry = kind ? byKind[kind] : undefined;
      if (entry) return { answer: retrieve(entry[0], entry[1], decodeURIComponent(id), params) };
      if (kind === "invoice_payments") {
        const found = [...fake.invoicePayments.values()].flat().find((p) => p.id === id);
        return found ? { answer: [200, found] } : asError(missing("invoice_payment", id));
      }
    }
    const session = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path);
    if (get && session?.[1]) {
      return { answer: retrieve(fake.checkoutSessions, "checkout.session", session[1], params) };
    }
    const customerMethods = /^\/v1\/customers\/([^/]+)\/payment_methods$/.exec(path);
    if (get && customerMethods?.[1]) {
      const customer = customerMethods[1];
      if (!fake.customers.has(customer)) return asError(missing("customer", customer));
      return {
        answer: list(path, methodsOf(customer, params.type), params),
      };
    }
    if (get && path === "/v1/payment_methods") {
      const customer = typeof params.customer === "string" ? params.customer : undefined;
      if (customer && !fake.customers.has(customer)) {
        return asError(missing("customer", customer, "customer"));
      }
      const items = customer ? methodsOf(customer, params.type) : [...fake.paymentMethods.values()];
      return { answer: list(path, items, params) };
    }
    if (get && path === "/v1/invoice_payments") {
      const invoice = typeof params.invoice === "string" ? params.invoice : undefined;
      const items = invoice
        ? (fake.invoicePayments.get(invoice) ?? [])
        : [...fake.invoicePayments.values()].flat();
      return { answer: list(path, items, params) };
    }
    if (get && path === "/v1/refunds") {
      const items = [...fake.refunds.values()].filter(
        (r) =>
          (params.charge === undefined || r.charge === params.charge) &&
          (params.payment_intent === undefined || r.payment_intent === params.payment_intent),
      );
      return { answer: list(path, items, params) };
    }
    if (get && path === "/v1/payment_intents") {
      const items = [...fake.paymentIntents.values()].filter(
        (p) => params.customer === undefined || p.customer === params.customer,
      );
      return { answer: list(path, items.reverse(), params) };
    }
    if (get && path === "/v1/charges") {
      const items = [...fake.charges.values()].filter(
        (c) =>
          (params.customer === undefined || c.customer === params.customer) &&
          (params.payment_intent === undefined || c.payment_intent === params.payment_intent),
      );
      return { answer: list(path, items.reverse(), params) };
    }
    if (method === "POST" && path === "/v1/payment_intents") {
      const made = createIntent(params);
      return "error" in made ? asError(made) : made;
    }
    return {
      answer: [
        404,
        {
          error: {
            type: "invalid_request_error",
            message: `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`,
          },
        },
      ],
    };
  };

  /** A customer's PaymentMethods (of `type`, when given), newest first. */
  const methodsOf = (customer: string, type: unknown) =>
    [...fake.paymentMethods.values()]
      .filter((m) => m.customer === customer && (type === undefined || m.type === type))
      .reverse();

  /** Whether the request carries a key the fake accepts. @returns the 401 answer otherwise */
  const unauthorized = (headers: Record<string, string>): [number, unknown] | undefined => {
    const key = /^Bearer (.+)$/.exec(headers.authorization ?? "")?.[1];
    const ok =
      key !== undefined &&
      (fake.secretKey === undefined ? /^(sk|rk)_/.test(key) : key === fake.secretKey);
    if (ok) return undefined;
    return [
      401,
      {
        error: {
          type: "invalid_request_error",
          message: key
            ? `Invalid API Key provided: ${key.slice(0, 8)}${"*".repeat(Math.max(0, key.length - 12))}${key.slice(-4)}`
            : "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY').",
        },
      },
    ];
  };

  const write = (res: ServerResponse, record: RecordedRequest, status: number, json: unknown) => {
    open.delete(res);
    record.status = status;
    if (res.destroyed) return;
    res.writeHead(status, {
      "Content-Type": "application/json",
      "Request-Id": stripeId("req"),
      "Stripe-Version": record.headers["stripe-version"] ?? "2026-10-28.endive",
      ...(record.replayed ? { "Idempotent-Replayed": "true" } : {}),
    });
    res.end(JSON.stringify(json));
  };

  const handle = (req: IncomingMessage, res: ServerResponse, rawBody: string) => {
    const url = new URL(req.url ?? "/", "http://stripe.fake");
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      headers[name] = Array.isArray(value) ? value.join(", ") : (value ?? "");
    }
    const record: RecordedRequest = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: parseStripeForm(url.search.slice(1)),
      body: parseStripeForm(rawBody),
      rawBody,
      headers,
      replayed: false,
    };
    fake.requests.push(record);
    open.add(res);
    res.on("close", () => open.delete(res));

    const denied = unauthorized(headers);
    if (denied) return write(res, record, ...denied);
    const faultAt = fake.faults.findIndex(
      (f) =>
        f.method === record.method &&
        (typeof f.path === "string" ? record.path.startsWith(f.path) : f.path.test(record.path)),
    );
    const fault = fake.faults[faultAt];
    if (fault) {
      fault.times = (fault.times ?? 1) - 1;
      if (fault.times <= 0) fake.faults.splice(faultAt, 1);
      return write(res, record, fault.answer.status, { error: fault.answer.error });
    }

    const key = record.method === "POST" ? headers["idempotency-key"] : undefined;
    if (key !== undefined) {
      const stored = fake.idempotency.get(key);
      if (stored && stored.body !== rawBody) {
        return write(res, record, 400, {
          error: {
            type: "idempotency_error",
            message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
          },
        });
      }
      if (stored) {
        record.replayed = true;
        return write(res, record, stored.status, stored.json);
      }
      if (inFlightKeys.has(key)) {
        return write(res, record, 409, {
          error: {
            type: "invalid_request_error",
            code: "idempotency_key_in_use",
            message:
              "There is currently another in-progress request using this Stripe-Idempotency-Key. Please try again later.",
          },
        });
      }
    }
    const params = record.method === "GET" ? record.query : record.body;
    const { answer, outcome } = route(record.method, record.path, params);
    const [status, json] = answer;
    const finish = () => {
      if (key !== undefined) {
        inFlightKeys.delete(key);
        fake.idempotency.set(key, { body: rawBody, status, json });
      }
      write(res, record, status, json);
    };
    if (outcome?.result === "hang") {
      if (key !== undefined) inFlightKeys.add(key);
      // The client gone, the request completes without it: the PaymentIntent succeeds, and its
      // answer is what a retry with the same key and body gets.
      res.on("close", () => {
        const intent = json as StripeObject;
        const stored = fake.paymentIntents.get(intent.id);
        if (stored) succeed(stored);
        if (key !== undefined) {
          inFlightKeys.delete(key);
          fake.idempotency.set(key, {
            body: rawBody,
            status,
            json: structuredClone(stored ?? json),
          });
        }
      });
      return;
    }
    const until = outcome && "until" in outcome ? outcome.until : undefined;
    const delayMs = outcome && "delayMs" in outcome ? (outcome.delayMs ?? 0) : 0;
    if (delayMs > 0 || until !== undefined) {
      if (key !== undefined) inFlightKeys.add(key);
      const delayed = new Promise((resolve) => setTimeout(resolve, delayMs));
      void Promise.allSettled([delayed, until]).then(finish);
      return;
    }
    finish();
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => handle(req, res, Buffer.concat(chunks).toString("utf8")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  fake.port = (server.address() as AddressInfo).port;
  fake.url = `http://127.0.0.1:${fake.port}`;
  return fake;
}
