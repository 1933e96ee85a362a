/**
 * The human API reference (docs/operations.md): `GET /docs` is Scalar's API reference over
 * `/openapi.json`, and `GET /docs/scalar.js` serves Scalar's standalone browser bundle from the
 * installed `@scalar/api-reference` package, so the page works without any CDN (air-gapped
 * hosts, strict firewalls). The page asks for no web fonts and sends no telemetry.
 */
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import { Scalar } from "@scalar/hono-api-reference";
import type { Context } from "hono";
import { ApiError } from "../errors.ts";
import type { App, AppEnv } from "./context.ts";

export const DOCS_BUNDLE_PATH = "/docs/scalar.js";

const FAVICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E" +
  "%3Ccircle cx='8' cy='8' r='7' fill='%23e36002'/%3E%3C/svg%3E";

interface Bundle {
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

let bundle: Promise<Bundle> | undefined;

function makeBundle(body: Buffer): Bundle {
  const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return { body, gzip: gzipSync(body), etag };
}

/**
 * For builds that carry the bundle inside the program (the single binary): serve `source`
 * instead of reading the installed package.
 */
export function setDocsBundle(source: string | Uint8Array): void {
  bundle = Promise.resolve(makeBundle(Buffer.from(source)));
}

/** Reads (once) the standalone bundle of the installed @scalar/api-reference. */
function loadBundle(): Promise<Bundle> {
  if (!bundle) {
    const loading = (async () => {
      const file = createRequire(import.meta.url).resolve(
        "@scalar/api-reference/browser/standalone.js",
      );
      return makeBundle(await readFile(file));
    })();
    loading.catch(() => {
      if (bundle === loading) bundle = undefined;
    });
    bundle = loading;
  }
  return bundle;
}

async function serveBundle(c: Context<AppEnv>): Promise<Response> {
  let b: Bundle;
  try {
    b = await loadBundle();
  } catch {
    throw new ApiError("NOT_FOUND", "The API reference bundle is not installed");
  }
  const headers: Record<string, string> = {
    "Content-Type": "text/javascript; charset=utf-8",
    "Cache-Control": "public, max-age=86400",
    ETag: b.etag,
    Vary: "Accept-Encoding",
  };
  if (c.req.header("If-None-Match") === b.etag) return c.body(null, 304, headers);
  if (/\bgzip\b/.test(c.req.header("Accept-Encoding") ?? "")) {
    return c.body(new Uint8Array(b.gzip), 200, { ...headers, "Content-Encoding": "gzip" });
  }
  return c.body(new Uint8Array(b.body), 200, headers);
}

/** Registers `GET /docs` and `GET /docs/scalar.js` (no key needed). */
export function registerDocs(app: App): void {
  app.get(DOCS_BUNDLE_PATH, serveBundle);
  app.get(
    "/docs",
    Scalar({
      pageTitle: "Credit Ledger API reference",
      // Relative to /docs, so the page also works behind a reverse proxy under a path prefix.
      url: "openapi.json",
      cdn: DOCS_BUNDLE_PATH.slice(1),
      withDefaultFonts: false,
      telemetry: false,
      agent: { disabled: true },
      showDeveloperTools: "never",
      defaultOpenAllTags: true,
      // An inline icon, so that the browser does not ask for /favicon.ico.
      favicon: FAVICON,
    }),
  );
}
