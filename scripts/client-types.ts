/**
 * `npm run client:types`: regenerates the typed client's types (src/client/openapi.ts) from the
 * OpenAPI document that `createApp` builds, in-process and without a database
 * (docs/api.md#typed-client). With `--check` it writes nothing and exits 1 when the committed
 * file differs from what the current document generates (test/client-types.test.ts checks the
 * same on every run of the suite).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { generateClientTypes } from "./lib/client-types.ts";
import { documentWithoutDatabase } from "./lib/openapi-document.ts";

const target = fileURLToPath(
  new URL(
    import.meta.url.includes("/dist/") ? "../../src/client/openapi.ts" : "../src/client/openapi.ts",
    import.meta.url,
  ),
);

const generated = await generateClientTypes(documentWithoutDatabase());
const committed = readFileSync(target, "utf8");
if (process.argv.includes("--check")) {
  if (generated !== committed) {
    console.error(`${target} differs from the document's types: run npm run client:types`);
    process.exit(1);
  }
  console.log(`${target} matches the document`);
} else if (generated === committed) {
  console.log(`${target} is up to date`);
} else {
  writeFileSync(target, generated);
  console.log(`wrote ${target}; run npm run build to compile it`);
}
