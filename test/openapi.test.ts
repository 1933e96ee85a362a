/**
 * `/openapi.json`: a valid OpenAPI 3.1 document (checked by @readme/openapi-parser) with every
 * route of the specification, and an example for each request (body and query parameters) and
 * each 200 response; every example conforms to the schema it illustrates. Every operation has a
 * unique camelCase `operationId` and a description, `/health` and `/ready` are in it, and its
 * `webhooks` section has one entry per event type whose body is the event built from the very
 * schema of src/events.ts (docs/api.md#openapi-document-and-typed-client).
 */
import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import { dereference, validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { accountRoutes } from "../src/accounts/routes.ts";
import { EVENTS } from "../src/events.ts";
import { ledgerRoutes } from "../src/ledger/routes.ts";
import { modelRoutes } from "../src/models/routes.ts";
import { planRoutes } from "../src/plans/routes.ts";
import { projectRoutes } from "../src/projects/routes.ts";
import { reservationRoutes } from "../src/reservations/routes.ts";
import { transactionRoutes } from "../src/transactions/routes.ts";
import { usageRoutes } from "../src/usage/routes.ts";
import { type CallInput, makeLedger, type TestLedger } from "./harness.ts";

/** The routes of the API (docs/api.md#endpoints). */
const SPEC_ROUTES: [method: "get" | "post", path: string][] = [
  ["post", "/v1/accounts/create"],
  ["get", "/v1/accounts"],
  ["get", "/v1/accounts/get"],
  ["get", "/v1/accounts/balance"],
  ["post", "/v1/accounts/credits/add"],
  ["post", "/v1/accounts/credits/deduct"],
  ["get", "/v1/accounts/grants"],
  ["get", "/v1/plans"],
  ["post", "/v1/plans/create"],
  ["post", "/v1/plans/archive"],
  ["post", "/v1/plans/activate"],
  ["get", "/v1/accounts/plans"],
  ["post", "/v1/accounts/plans/assign"],
  ["post", "/v1/accounts/plans/cancel"],
  ["post", "/v1/reservations/create"],
  ["get", "/v1/reservations"],
  ["post", "/v1/reservations/confirm"],
  ["post", "/v1/reservations/cancel"],
  ["get", "/v1/transactions"],
  ["post", "/v1/transactions/create"],
  ["post", "/v1/usage/record"],
  ["get", "/v1/usage"],
  ["get", "/v1/models"],
  ["post", "/v1/models/calculate"],
  ["post", "/v1/accounts/update"],
  ["post", "/v1/webhooks/create"],
  ["get", "/v1/webhooks"],
  ["post", "/v1/webhooks/delete"],
  ["get", "/v1/webhooks/deliveries"],
  ["get", "/v1/project"],
  ["post", "/v1/project/update"],
  // Managing webhook endpoints (docs/api.md#managing-webhook-endpoints).
  ["post", "/v1/webhooks/update"],
  ["post", "/v1/webhooks/rotate-secret"],
  ["post", "/v1/webhooks/test"],
  ["post", "/v1/webhooks/deliveries/retry"],
  ["post", "/v1/batch"],
  // Spend limits (docs/api.md#spend-limits).
  ["get", "/v1/accounts/limits"],
  ["get", "/v1/accounts/check"],
  // Reversals (docs/api.md#reversals).
  ["post", "/v1/transactions/reverse"],
  // Transfers (docs/api.md#transfers).
  ["post", "/v1/accounts/transfer"],
  // Selling credits through Stripe (docs/api.md#selling-credits-through-stripe).
  ["get", "/v1/purchases"],
  ["get", "/v1/stripe/events"],
  // Automatic top-up (docs/api.md#automatic-top-up).
  ["post", "/v1/accounts/auto-topup"],
  ["get", "/v1/accounts/auto-topup"],
  ["get", "/v1/accounts/auto-topup/attempts"],
];

/** The export routes (docs/api.md#exports): a file instead of a JSON body. */
const EXPORT_ROUTES: [method: "get", path: string][] = [
  ["get", "/v1/transactions/export"],
  ["get", "/v1/usage/export"],
];

/** The routes outside /v1 that the document describes (no API key). */
const SERVICE_ROUTES: [method: "get", path: string][] = [
  ["get", "/health"],
  ["get", "/ready"],
];

/** The event types of docs/api.md#event-types (`webhook.test`: POST /v1/webhooks/test). */
const EVENT_TYPES = [
  "balance.low",
  "reservation.expired",
  "credits.expired",
  "plan.granted",
  "spend_limit.reached",
  "transaction.reversed",
  "credits.purchased",
  "credits.clawed_back",
  "purchase.clawback_incomplete",
  "auto_topup.succeeded",
  "auto_topup.failed",
  "webhook.test",
];

/** The JSON Schema subset zod-to-openapi emits, as far as these checks read it. */
interface JsonSchema {
  type?: string | string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: boolean | JsonSchema;
  required?: string[];
  example?: unknown;
  examples?: unknown;
}

const jsonSchema: z.ZodType<JsonSchema> = z.lazy(() =>
  z.looseObject({
    type: z.union([z.string(), z.array(z.string())]).optional(),
    anyOf: z.array(jsonSchema).optional(),
    oneOf: z.array(jsonSchema).optional(),
    allOf: z.array(jsonSchema).optional(),
    enum: z.array(z.unknown()).optional(),
    const: z.unknown().optional(),
    minLength: z.number().optional(),
    maxLength: z.number().optional(),
    minimum: z.number().optional(),
    maximum: z.number().optional(),
    exclusiveMinimum: z.number().optional(),
    items: jsonSchema.optional(),
    properties: z.record(z.string(), jsonSchema).optional(),
    additionalProperties: z.union([z.boolean(), jsonSchema]).optional(),
    required: z.array(z.string()).optional(),
    example: z.unknown().optional(),
    examples: z.unknown().optional(),
  }),
);

/** A media type object: its schema and its example(s). */
const mediaSchema = z.looseObject({
  schema: jsonSchema.optional(),
  example: z.unknown().optional(),
  examples: z.record(z.string(), z.looseObject({ value: z.unknown() })).optional(),
});
type Media = z.infer<typeof mediaSchema>;
const contentSchema = z.record(z.string(), mediaSchema);

/** The operations of one path or webhook, by method. */
const pathItemSchema = z.record(
  z.string(),
  z.looseObject({
    summary: z.unknown().optional(),
    operationId: z.unknown().optional(),
    description: z.unknown().optional(),
    security: z.unknown().optional(),
    tags: z.unknown().optional(),
    requestBody: z.looseObject({ content: contentSchema }).optional(),
    parameters: z
      .array(
        z.looseObject({
          name: z.string(),
          in: z.string().optional(),
          required: z.boolean().optional(),
          example: z.unknown().optional(),
          schema: jsonSchema.optional(),
        }),
      )
      .optional(),
    responses: z.record(z.string(), z.looseObject({ content: contentSchema.optional() })),
  }),
);

/** The parts of an OpenAPI document these checks read; `validate` checks the whole. */
const documentSchema = z.looseObject({
  openapi: z.unknown(),
  security: z.unknown().optional(),
  paths: z.record(z.string(), pathItemSchema),
  webhooks: z.record(z.string(), pathItemSchema).optional(),
});
type Document = z.infer<typeof documentSchema>;

/** What the parser takes: a document object (or a file name, not used here). */
type ApiDocument = Exclude<Parameters<typeof dereference>[0], string>;

/** Whether `value` has the top level of an OpenAPI document (`validate` checks all of it). */
function isApiDocument(value: unknown): value is ApiDocument {
  return (
    isObject(value) &&
    typeof value.openapi === "string" &&
    isObject(value.info) &&
    isObject(value.paths)
  );
}

/** The example a media type or its schema carries, if any. */
function exampleOf(media: Media | undefined): unknown {
  if (!media) return undefined;
  if (media.example !== undefined) return media.example;
  if (media.examples) return Object.values(media.examples)[0]?.value;
  const schema = media.schema;
  if (schema?.example !== undefined) return schema.example;
  if (Array.isArray(schema?.examples)) return schema.examples[0];
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Problems of `value` against `schema` (the JSON Schema subset zod-to-openapi emits); an
 * object example may only have the properties its schema declares.
 */
function conformance(schema: JsonSchema | undefined, value: unknown, at: string): string[] {
  if (typeof schema !== "object" || schema === null) return [];
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) {
    const fits = alternatives.some((s) => conformance(s, value, at).length === 0);
    return fits ? [] : [`${at}: matches none of the alternatives`];
  }
  const problems: string[] = [];
  for (const part of schema.allOf ?? []) problems.push(...conformance(part, value, at));
  if (schema.enum && !schema.enum.includes(value)) problems.push(`${at}: not in enum`);
  if ("const" in schema && schema.const !== value) problems.push(`${at}: not the const`);
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    const actual =
      value === null
        ? "null"
        : Array.isArray(value)
          ? "array"
          : typeof value === "number" && Number.isInteger(value)
            ? "integer"
            : typeof value;
    const ok = types.includes(actual) || (actual === "integer" && types.includes("number"));
    if (!ok) return [`${at}: ${JSON.stringify(value)} is not ${types.join("|")}`];
  }
  if (typeof value === "string") {
    if (schema.minLength !== undefined && value.length < schema.minLength)
      problems.push(`${at}: too short`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength)
      problems.push(`${at}: too long`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) problems.push(`${at}: < minimum`);
    if (schema.maximum !== undefined && value > schema.maximum) problems.push(`${at}: > maximum`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum)
      problems.push(`${at}: ≤ exclusiveMinimum`);
  }
  if (Array.isArray(value) && schema.items) {
    value.forEach((item, i) => {
      problems.push(...conformance(schema.items, item, `${at}[${i}]`));
    });
  }
  if (isObject(value) && (schema.properties || schema.additionalProperties !== undefined)) {
    for (const key of schema.required ?? []) {
      if (!(key in value)) problems.push(`${at}.${key}: required but missing`);
    }
    for (const [key, v] of Object.entries(value)) {
      const prop = schema.properties?.[key];
      if (prop) problems.push(...conformance(prop, v, `${at}.${key}`));
      else if (isObject(schema.additionalProperties))
        problems.push(...conformance(schema.additionalProperties, v, `${at}.${key}`));
      else if (schema.additionalProperties !== true && !isObject(schema.additionalProperties))
        problems.push(`${at}.${key}: not a property of the schema`);
    }
  }
  return problems;
}

/** Every schema of the (dereferenced) document that carries an example, with its location. */
function schemasWithExamples(node: unknown, at: string, out: [string, unknown][] = []) {
  if (Array.isArray(node)) {
    node.forEach((n, i) => {
      schemasWithExamples(n, `${at}[${i}]`, out);
    });
  } else if (isObject(node)) {
    const looksLikeSchema =
      "type" in node || "properties" in node || "anyOf" in node || "enum" in node;
    if (looksLikeSchema && node.example !== undefined) out.push([at, node]);
    for (const [key, child] of Object.entries(node)) {
      if (key !== "example" && key !== "examples") schemasWithExamples(child, `${at}.${key}`, out);
    }
  }
  return out;
}

/** The dereferenced JSON schema zod-to-openapi makes of `schema` in a document of its own. */
async function alone(schema: z.ZodType): Promise<unknown> {
  const app = new OpenAPIHono();
  app.openAPIRegistry.register("Alone", schema);
  const document = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: { title: "alone", version: "0" },
  });
  const plain: unknown = JSON.parse(JSON.stringify(document));
  if (!isApiDocument(plain)) throw new Error("not a document");
  const components = z
    .looseObject({ components: z.object({ schemas: z.record(z.string(), z.unknown()) }) })
    .parse(await dereference(plain)).components.schemas;
  // The schema registers under its own name (`BalanceLowData`), or `Alone` when it has none.
  const [only] = Object.values(components);
  expect(Object.keys(components)).toHaveLength(1);
  return only;
}

describe("GET /openapi.json", () => {
  let t: TestLedger;
  /** The document as served. */
  let raw: ApiDocument;
  /** Its dereferenced form: every `$ref` replaced by what it points at. */
  let derefRaw: ApiDocument;
  let doc: Document;
  let deref: Document;

  beforeAll(async () => {
    t = await makeLedger();
    const res = await t.api("GET", "/openapi.json", { key: null });
    expect(res.status).toBe(200);
    if (!isApiDocument(res.body)) throw new Error("/openapi.json is not an OpenAPI document");
    raw = res.body;
    derefRaw = await dereference(structuredClone(raw));
    doc = documentSchema.parse(raw);
    deref = documentSchema.parse(derefRaw);
  });
  afterAll(async () => t.close());

  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const result = await validate(structuredClone(raw));
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it("has every route of the specification, /health and /ready, and only routes that exist", () => {
    const routes = [...SPEC_ROUTES, ...EXPORT_ROUTES, ...SERVICE_ROUTES];
    for (const [method, path] of routes) {
      expect(doc.paths[path]?.[method], `${method.toUpperCase()} ${path}`).toBeDefined();
    }
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((m) => `${m} ${path}`),
    );
    expect(documented.sort()).toEqual(routes.map(([m, p]) => `${m} ${p}`).sort());
  });

  it("gives every operation, webhooks included, a unique camelCase operationId and a description", () => {
    const operations = [
      ...Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => ({ at: `${method} ${path}`, op })),
      ),
      ...Object.entries(doc.webhooks ?? {}).flatMap(([name, ops]) =>
        Object.entries(ops).map(([method, op]) => ({ at: `webhook ${name} ${method}`, op })),
      ),
    ];
    expect(operations.length).toBe(
      SPEC_ROUTES.length + EXPORT_ROUTES.length + SERVICE_ROUTES.length + EVENT_TYPES.length,
    );
    const ids = operations.map(({ at, op }) => {
      expect(op.operationId, at).toMatch(/^[a-z][a-zA-Z0-9]*$/);
      expect(op.description, at).toEqual(expect.stringMatching(/\S.{20,}/));
      return String(op.operationId);
    });
    expect(new Set(ids).size).toBe(ids.length);
    // The names the docs and the README use.
    const byRoute = Object.fromEntries(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => [`${method} ${path}`, op.operationId]),
      ),
    );
    expect(byRoute).toMatchObject({
      "post /v1/accounts/create": "createAccount",
      "post /v1/accounts/credits/add": "addCredits",
      "post /v1/accounts/credits/deduct": "deductCredits",
      "post /v1/reservations/create": "createReservation",
      "post /v1/reservations/confirm": "confirmReservation",
      "get /v1/transactions": "listTransactions",
      "get /v1/transactions/export": "exportTransactions",
      "get /v1/usage/export": "exportUsage",
      "post /v1/usage/record": "recordUsage",
      "post /v1/batch": "runBatch",
      "get /health": "getHealth",
      "get /ready": "getReadiness",
      "post /v1/webhooks/update": "updateWebhook",
      "post /v1/webhooks/rotate-secret": "rotateWebhookSecret",
      "post /v1/webhooks/test": "testWebhook",
      "post /v1/webhooks/deliveries/retry": "retryWebhookDelivery",
    });
  });

  it("documents /health and /ready without the API key, with their answers", async () => {
    for (const [method, path] of SERVICE_ROUTES) {
      const op = deref.paths[path]?.[method];
      expect(op?.security, path).toEqual([]);
      const schema = op?.responses["200"]?.content?.["application/json"]?.schema;
      const res = await t.api("GET", path, { key: null });
      expect(res.status).toBe(200);
      expect(conformance(schema, res.body, path)).toEqual([]);
      expect(exampleOf(op?.responses["200"]?.content?.["application/json"])).toEqual(res.body);
    }
    const unavailable = deref.paths["/ready"]?.get?.responses["503"]?.content;
    expect(exampleOf(unavailable?.["application/json"])).toEqual({ status: "unavailable" });
  });

  it("has one webhook per event type: the event built from its schema, with the signature headers", async () => {
    expect(Object.keys(doc.webhooks ?? {}).sort()).toEqual([...EVENT_TYPES].sort());
    expect(Object.keys(EVENTS).sort()).toEqual([...EVENT_TYPES].sort());
    for (const [type, definition] of Object.entries(EVENTS)) {
      const ops = deref.webhooks?.[type];
      expect(Object.keys(ops ?? {}), type).toEqual(["post"]);
      const op = ops?.post;
      expect(op?.security, type).toEqual([]);
      const headers = (op?.parameters ?? []).map((p) => [p.in, p.name, p.required]);
      expect(headers, type).toEqual([
        ["header", "webhook-id", true],
        ["header", "webhook-timestamp", true],
        ["header", "webhook-signature", true],
      ]);
      const body = op?.requestBody?.content["application/json"]?.schema;
      expect(body?.required, type).toEqual(["id", "type", "createdAt", "data"]);
      expect(Object.keys(body?.properties ?? {}), type).toEqual([
        "id",
        "type",
        "createdAt",
        "data",
      ]);
      expect(body?.properties?.id?.type).toBe("string");
      expect(body?.properties?.createdAt?.type).toBe("string");
      expect(body?.properties?.type, type).toEqual({ type: "string", enum: [type] });
      // `data` is exactly what the schema of src/events.ts makes on its own.
      expect(body?.properties?.data, type).toEqual(await alone(definition.data));
    }
  });

  describe.each(SPEC_ROUTES)("%s %s", (method, path) => {
    it("has a summary, a tag and the API key requirement", () => {
      const op = doc.paths[path]?.[method];
      expect(op?.summary).toEqual(expect.any(String));
      expect(op?.tags).toHaveLength(1);
      // X-API-Key or Authorization: Bearer (docs/api.md#authentication-and-projects).
      expect(doc.security).toEqual([{ ApiKey: [] }, { BearerAuth: [] }]);
    });

    it("has an example for its request body or query parameters", () => {
      const op = deref.paths[path]?.[method];
      expect(op).toBeDefined();
      if (method === "post") {
        expect(op?.requestBody, "POST routes take a JSON body").toBeDefined();
        expect(exampleOf(op?.requestBody?.content["application/json"])).toBeDefined();
      } else {
        expect(op?.requestBody).toBeUndefined();
      }
      for (const param of op?.parameters ?? []) {
        expect(param.example ?? param.schema?.example, `parameter ${param.name}`).toBeDefined();
      }
    });

    it("has an example for its 200 response", () => {
      const ok = deref.paths[path]?.[method]?.responses["200"];
      expect(ok).toBeDefined();
      expect(exampleOf(ok?.content?.["application/json"])).toBeDefined();
    });

    it("has an example for its error responses", () => {
      const responses = deref.paths[path]?.[method]?.responses ?? {};
      for (const status of ["400", "401", "500"]) {
        expect(exampleOf(responses[status]?.content?.["application/json"]), status).toBeDefined();
      }
    });
  });

  describe.each(EXPORT_ROUTES)("%s %s", (method, path) => {
    it("has a summary, a tag, and an example for each query parameter", () => {
      const op = deref.paths[path]?.[method];
      expect(op?.summary).toEqual(expect.any(String));
      expect(op?.tags).toHaveLength(1);
      expect(op?.requestBody).toBeUndefined();
      const names = (op?.parameters ?? []).map((p) => p.name);
      expect(names).toEqual(expect.arrayContaining(["accountId", "startDate", "format"]));
      expect(names).not.toContain("limit");
      for (const param of op?.parameters ?? []) {
        expect(param.example ?? param.schema?.example, `parameter ${param.name}`).toBeDefined();
      }
    });

    it("answers a CSV or NDJSON file whose examples start as a real export does", async () => {
      const content = deref.paths[path]?.[method]?.responses["200"]?.content ?? {};
      expect(Object.keys(content).sort()).toEqual(["application/x-ndjson", "text/csv"]);
      const csv = exampleOf(content["text/csv"]);
      const ndjson = exampleOf(content["application/x-ndjson"]);
      expect(typeof csv === "string" && csv.endsWith("\r\n")).toBe(true);
      expect(typeof ndjson === "string" && ndjson.endsWith("\n")).toBe(true);
      const real = await t.app.request(path, { headers: { "X-API-Key": t.key } });
      expect(real.status).toBe(200);
      const header = (await real.text()).split("\r\n")[0];
      expect(String(csv).split("\r\n")[0]).toBe(header);
      for (const line of String(ndjson).trim().split("\n"))
        expect(JSON.parse(line)).toBeTypeOf("object");
    });

    it("has an example for its error responses", () => {
      const responses = deref.paths[path]?.[method]?.responses ?? {};
      for (const status of ["400", "401", "404", "500"]) {
        expect(exampleOf(responses[status]?.content?.["application/json"]), status).toBeDefined();
      }
    });
  });

  it("has examples that conform to their schemas", () => {
    const found = schemasWithExamples(isObject(derefRaw) ? derefRaw.paths : undefined, "paths");
    expect(found.length).toBeGreaterThan(100);
    const problems = found.flatMap(([at, node]) => {
      const schema = jsonSchema.safeParse(node);
      if (!schema.success) return [`${at}: not a schema: ${schema.error.message}`];
      return conformance(schema.data, schema.data.example, at);
    });
    // The examples of media types (each error code's body).
    const errorCode = z.object({ error: z.object({ code: z.string() }) });
    for (const [path, ops] of Object.entries(deref.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, r] of Object.entries(op.responses)) {
          const m = r.content?.["application/json"];
          for (const [name, e] of Object.entries(m?.examples ?? {})) {
            const at = `${method} ${path} ${status} ${name}`;
            problems.push(...conformance(m?.schema, e.value, at));
            if (/^[A-Z_]+$/.test(name)) expect(errorCode.parse(e.value).error.code, at).toBe(name);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("describes the real responses: the README tour conforms to the documented schemas", async () => {
    const problems: string[] = [];
    /** Calls `route` (expecting 200) and checks the body against the documented 200 schema. */
    const call = async <R extends RouteConfig>(route: R, input: CallInput = {}) => {
      const body = await t.call(route, input);
      const at = `${route.method} ${route.path} ${JSON.stringify(input.query ?? {})}`;
      const media = deref.paths[route.path]?.[route.method]?.responses["200"]?.content;
      const schema = media?.["application/json"]?.schema;
      expect(schema, at).toBeDefined();
      problems.push(...conformance(schema, body, at));
      return body;
    };
    await call(accountRoutes.create, {
      body: {
        externalId: "customer-42",
        name: "Ada Lovelace",
        email: "ada@example.com",
        metadata: { crmId: "hs_9921" },
      },
    });
    await call(ledgerRoutes.add, {
      body: { accountId: "customer-42", amount: 25.5, paymentMethod: "card" },
    });
    await call(projectRoutes.get);
    await call(projectRoutes.update, { body: { creditsPerUsd: 100 } });
    const usage = {
      modelId: "claude-sonnet-4-5",
      inputTokens: 9500,
      outputTokens: 3100,
      cachedTokens: 2000,
    };
    const estimate = await call(modelRoutes.calculate, { body: usage });
    const { reservation } = await call(reservationRoutes.create, {
      body: {
        accountId: "customer-42",
        amount: estimate.estimatedCostCredits,
        operation: "chat.completion",
        model: "claude-sonnet-4-5",
      },
    });
    await call(reservationRoutes.confirm, { body: { reservationId: reservation.id, usage } });
    const held = await call(reservationRoutes.create, {
      body: { accountId: "customer-42", amount: 9.6 },
    });
    const confirmed = await call(reservationRoutes.confirm, {
      body: { reservationId: held.reservation.id, actualAmount: 6.96 },
    });
    await call(usageRoutes.record, {
      body: { accountId: "customer-42", deduct: true, ...usage },
    });
    await call(usageRoutes.record, {
      body: {
        accountId: "customer-42",
        transactionId: confirmed.transactionId,
        modelId: "claude-sonnet-4-5",
        inputTokens: 9500,
        outputTokens: 3100,
        cachedTokens: 2000,
      },
    });
    await call(ledgerRoutes.deduct, { body: { accountId: "customer-42", amount: 1.25 } });
    await call(transactionRoutes.create, {
      body: { accountId: "customer-42", amount: 5.5, type: "credit" },
    });
    const hold = await call(reservationRoutes.create, {
      body: { accountId: "customer-42", amount: 4.8 },
    });
    const { plan } = await call(planRoutes.create, {
      body: { name: "Pro monthly", amount: 500, interval: "month" },
    });
    await call(planRoutes.archive, { body: { planId: plan.id } });
    await call(planRoutes.activate, { body: { planId: plan.id } });
    const { accountPlan } = await call(planRoutes.assign, {
      body: { accountId: "customer-42", planId: plan.id },
    });
    await call(planRoutes.listAssigned, { query: { accountId: "customer-42" } });
    await call(planRoutes.cancel, { body: { accountPlanId: accountPlan.id } });
    await call(planRoutes.list);
    await call(reservationRoutes.list, { query: { accountId: "customer-42" } });
    await call(reservationRoutes.cancel, { body: { reservationId: hold.reservation.id } });
    await call(accountRoutes.list);
    await call(accountRoutes.list, { query: { limit: 10 } });
    await call(accountRoutes.get, { query: { accountId: "customer-42" } });
    await call(accountRoutes.balance, { query: { externalId: "customer-42" } });
    await call(transactionRoutes.list, {
      query: { accountId: "customer-42", include: "reservation,usage" },
    });
    await call(usageRoutes.list);
    await call(usageRoutes.list, { query: { summary: true } });
    await call(usageRoutes.list, { query: { summary: true, groupBy: "model" } });
    await call(modelRoutes.list, { query: { provider: "anthropic" } });
    await call(modelRoutes.list, { query: { modelId: "claude-sonnet-4-5" } });
    await call(modelRoutes.calculate, {
      body: {
        modelId: "claude-sonnet-4-5",
        inputTokens: 9500,
        outputTokens: 3100,
        cachedTokens: 2000,
      },
    });
    expect(problems).toEqual([]);
  });

  it("is served without an API key, as are /docs, /health, /ready and /metrics", async () => {
    for (const path of ["/openapi.json", "/docs", "/health", "/ready", "/metrics"]) {
      expect((await t.api("GET", path, { key: null })).status, path).toBe(200);
    }
  });
});
