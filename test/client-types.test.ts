/**
 * The typed client's types (src/client/openapi.ts) are exactly what openapi-typescript makes of
 * the document the service serves, so a route, field or event that changes without
 * `npm run client:types` fails here (docs/api.md#typed-client). The generator's document, built
 * without a database, is the served one; and every numeric field it keeps as a plain `number`
 * (a count, never an amount) is a field of the document.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COUNT_FIELDS, generateClientTypes } from "../scripts/lib/client-types.ts";
import { documentWithoutDatabase } from "../scripts/lib/openapi-document.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

const COMMITTED = new URL("../src/client/openapi.ts", import.meta.url);

/** Every property name of the document whose schema is a number (not an integer). */
function numberFields(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) {
    for (const item of node) numberFields(item, out);
  } else if (typeof node === "object" && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === "properties" && typeof value === "object" && value !== null) {
        for (const [name, schema] of Object.entries(value)) {
          const type: unknown = (schema as { type?: unknown }).type;
          const types = Array.isArray(type) ? type : [type];
          if (types.includes("number")) out.add(name);
        }
      }
      if (key !== "example" && key !== "examples") numberFields(value, out);
    }
  }
  return out;
}

describe("the client's generated types", () => {
  let t: TestLedger;
  let served: unknown;
  beforeAll(async () => {
    t = await makeLedger();
    const res = await t.api("GET", "/openapi.json", { key: null });
    expect(res.status).toBe(200);
    served = res.body;
  });
  afterAll(async () => t.close());

  it("are what the served document generates (else run npm run client:types)", async () => {
    const generated = await generateClientTypes(served);
    expect(generated, "run npm run client:types").toBe(readFileSync(COMMITTED, "utf8"));
  });

  it("are generated from the document the service serves, built without a database", () => {
    expect(documentWithoutDatabase()).toEqual(served);
  });

  it("keep as `number` only fields that exist and are counts", () => {
    const fields = numberFields(served);
    for (const name of COUNT_FIELDS) expect(fields, name).toContain(name);
    const types = readFileSync(COMMITTED, "utf8");
    // Each amount of the tour's answers is an `Amount`; each count a `number`.
    for (const amount of ["balance", "available", "balanceAfter", "estimatedCostUsd", "added"]) {
      expect(types).toMatch(new RegExp(`\\b${amount}: Amount;`));
      expect(types).not.toMatch(new RegExp(`\\b${amount}\\??: number`));
    }
    for (const count of ["totalCount", "inputTokens", "attempts"]) {
      expect(types).toMatch(new RegExp(`\\b${count}: number;`));
    }
  });
});
