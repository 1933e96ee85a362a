/**
 * `/openapi.json`: a valid OpenAPI 3.1 document (checked by @readme/openapi-parser) with every
 * route of the specification, and an example for each request (body and query parameters) and
 * each 200 response; every example conforms to the schema it illustrates.
 */
import { dereference, validate } from "@readme/openapi-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeLedger, type TestLedger } from "./harness.ts";

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
];

// biome-ignore lint/suspicious/noExplicitAny: the document is walked as plain JSON.
type Json = any;

/** The example a media type or its schema carries, if any. */
function exampleOf(media: Json): unknown {
  if (!media) return undefined;
  if (media.example !== undefined) return media.example;
  if (media.examples) return (Object.values(media.examples)[0] as Json)?.value;
  const schema = media.schema ?? media;
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.examples)) return schema.examples[0];
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Problems of `value` against `schema` (the JSON Schema subset zod-to-openapi emits); an
 * object example may only have the properties its schema declares.
 */
function conformance(schema: Json, value: unknown, at: string): string[] {
  if (typeof schema !== "object" || schema === null) return [];
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (alternatives) {
    const fits = alternatives.some((s) => conformance(s, value, at).length === 0);
    return fits ? [] : [`${at}: matches none of the alternatives`];
  }
  const problems: string[] = [];
  for (const part of (schema.allOf ?? []) as Json[]) problems.push(...conformance(part, value, at));
  if (schema.enum && !schema.enum.includes(value)) problems.push(`${at}: not in enum`);
  if ("const" in schema && schema.const !== value) problems.push(`${at}: not the const`);
  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
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
    for (const key of (schema.required ?? []) as string[]) {
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
function schemasWithExamples(node: Json, at: string, out: [string, Json][] = []) {
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

describe("GET /openapi.json", () => {
  let t: TestLedger;
  let doc: Json;
  let deref: Json;

  beforeAll(async () => {
    t = await makeLedger();
    const res = await t.api("GET", "/openapi.json", { key: null });
    expect(res.status).toBe(200);
    doc = res.body;
    deref = await dereference(structuredClone(doc));
  });
  afterAll(async () => t.close());

  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const result = await validate(structuredClone(doc));
    expect(result.valid ? [] : result.errors).toEqual([]);
  });

  it("has every route of the specification, and only routes that exist", () => {
    for (const [method, path] of SPEC_ROUTES) {
      expect(doc.paths[path]?.[method], `${method.toUpperCase()} ${path}`).toBeDefined();
    }
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops as object).map((m) => `${m} ${path}`),
    );
    expect(documented.sort()).toEqual(SPEC_ROUTES.map(([m, p]) => `${m} ${p}`).sort());
  });

  describe.each(SPEC_ROUTES)("%s %s", (method, path) => {
    it("has a summary, a tag and the API key requirement", () => {
      const op = doc.paths[path][method];
      expect(op.summary).toEqual(expect.any(String));
      expect(op.tags).toHaveLength(1);
      expect(doc.security).toEqual([{ ApiKey: [] }]);
    });

    it("has an example for its request body or query parameters", () => {
      const op = deref.paths[path][method];
      if (method === "post") {
        expect(op.requestBody, "POST routes take a JSON body").toBeDefined();
        expect(exampleOf(op.requestBody.content["application/json"])).toBeDefined();
      } else {
        expect(op.requestBody).toBeUndefined();
      }
      for (const param of op.parameters ?? []) {
        expect(param.example ?? param.schema?.example, `parameter ${param.name}`).toBeDefined();
      }
    });

    it("has an example for its 200 response", () => {
      const ok = deref.paths[path][method].responses["200"];
      expect(ok).toBeDefined();
      expect(exampleOf(ok.content["application/json"])).toBeDefined();
    });

    it("has an example for its error responses", () => {
      const { responses } = deref.paths[path][method];
      for (const status of ["400", "401", "500"]) {
        expect(exampleOf(responses[status]?.content["application/json"]), status).toBeDefined();
      }
    });
  });

  it("has examples that conform to their schemas", () => {
    const found = schemasWithExamples(deref.paths, "paths");
    expect(found.length).toBeGreaterThan(100);
    const problems = found.flatMap(([at, schema]) => conformance(schema, schema.example, at));
    // The examples of media types (each error code's body).
    for (const [path, ops] of Object.entries(deref.paths as Json)) {
      for (const [method, op] of Object.entries(ops as Json)) {
        const media: [string, Json][] = Object.entries((op as Json).responses).map(
          ([status, r]) => [status, (r as Json).content?.["application/json"]],
        );
        for (const [status, m] of media) {
          for (const [name, e] of Object.entries((m?.examples ?? {}) as Json)) {
            const at = `${method} ${path} ${status} ${name}`;
            problems.push(...conformance(m.schema, (e as Json).value, at));
            if (/^[A-Z_]+$/.test(name)) expect((e as Json).value.error.code, at).toBe(name);
          }
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("describes the real responses: the README tour conforms to the documented schemas", async () => {
    const problems: string[] = [];
    const call = async (method: "get" | "post", path: string, body?: unknown) => {
      const res = await t.api(method.toUpperCase(), path, body === undefined ? {} : { body });
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(200);
      const route = path.split("?")[0] as string;
      const schema = deref.paths[route][method].responses["200"].content["application/json"].schema;
      problems.push(...conformance(schema, res.body, `${method} ${path}`));
      return res.body;
    };
    await call("post", "/v1/accounts/create", {
      externalId: "customer-42",
      name: "Ada Lovelace",
      email: "ada@example.com",
      metadata: { crmId: "hs_9921" },
    });
    await call("post", "/v1/accounts/credits/add", {
      accountId: "customer-42",
      amount: 25.5,
      paymentMethod: "card",
    });
    const { reservation } = await call("post", "/v1/reservations/create", {
      accountId: "customer-42",
      amount: 9.6,
      operation: "chat.completion",
      model: "claude-sonnet-4-5",
    });
    const confirmed = await call("post", "/v1/reservations/confirm", {
      reservationId: reservation.id,
      actualAmount: 6.96,
    });
    await call("post", "/v1/usage/record", {
      accountId: "customer-42",
      transactionId: confirmed.transactionId,
      modelId: "claude-sonnet-4-5",
      inputTokens: 9500,
      outputTokens: 3100,
      cachedTokens: 2000,
    });
    await call("post", "/v1/accounts/credits/deduct", { accountId: "customer-42", amount: 1.25 });
    await call("post", "/v1/transactions/create", {
      accountId: "customer-42",
      amount: 5.5,
      type: "credit",
    });
    const hold = await call("post", "/v1/reservations/create", {
      accountId: "customer-42",
      amount: 4.8,
    });
    const { plan } = await call("post", "/v1/plans/create", {
      name: "Pro monthly",
      amount: 500,
      interval: "month",
    });
    await call("post", "/v1/plans/archive", { planId: plan.id });
    await call("post", "/v1/plans/activate", { planId: plan.id });
    const { accountPlan } = await call("post", "/v1/accounts/plans/assign", {
      accountId: "customer-42",
      planId: plan.id,
    });
    await call("get", "/v1/accounts/plans?accountId=customer-42");
    await call("post", "/v1/accounts/plans/cancel", { accountPlanId: accountPlan.id });
    await call("get", "/v1/plans");
    await call("get", "/v1/reservations?accountId=customer-42");
    await call("post", "/v1/reservations/cancel", { reservationId: hold.reservation.id });
    await call("get", "/v1/accounts");
    await call("get", "/v1/accounts?limit=10");
    await call("get", "/v1/accounts/get?accountId=customer-42");
    await call("get", "/v1/accounts/balance?externalId=customer-42");
    await call("get", "/v1/transactions?accountId=customer-42&include=reservation,usage");
    await call("get", "/v1/usage");
    await call("get", "/v1/usage?summary=true");
    await call("get", "/v1/models?provider=anthropic");
    await call("get", "/v1/models?modelId=claude-sonnet-4-5");
    await call("post", "/v1/models/calculate", {
      modelId: "claude-sonnet-4-5",
      inputTokens: 9500,
      outputTokens: 3100,
      cachedTokens: 2000,
    });
    expect(problems).toEqual([]);
  });

  it("is served without an API key, as are /docs, /health, /ready and /metrics", async () => {
    for (const path of ["/openapi.json", "/docs", "/health", "/ready", "/metrics"]) {
      expect((await t.api("GET", path, { key: null })).status, path).toBe(200);
    }
  });
});
