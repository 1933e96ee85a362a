/**
 * `GET /console`: the operator console (docs/operations.md#operator-console), a small client app
 * that the browser runs against the public `/v1` API with the key the operator types in. These
 * routes serve only its page and its two files, and need no key, like `/docs`: every number on
 * the console comes from `/v1`, called with the key.
 *
 * The page and its files are sent with a Content-Security-Policy that allows nothing but this
 * service: scripts, styles and API calls from the same origin, no frames, no forms posted
 * anywhere, no outside fonts, images or connections.
 */
import type { Context } from "hono";
import { ApiError } from "../errors.ts";
import type { App, AppEnv } from "../http/context.ts";
import { type ConsoleAssetName, consoleAssets } from "./assets.ts";

export const CONSOLE_PATH = "/console";

/** The headers of every console response. */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  "Content-Security-Policy": [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; "),
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

/**
 * The page. Its links are relative (`console/app.js` from `/console`), so the console also
 * works behind a reverse proxy that serves the service under a path prefix; the app calls the
 * API relative to the page as well. The icon is inline, so the browser asks for no /favicon.ico.
 */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Credit Ledger console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="console/app.css">
<script type="module" src="console/app.js"></script>
</head>
<body>
<div id="console"></div>
<noscript>The console needs JavaScript.</noscript>
</body>
</html>
`;

/** `GET /console`: the page (no cache kept: it names the files it loads). */
export function consolePage(c: Context<AppEnv>): Response {
  return c.body(PAGE, 200, {
    ...CONSOLE_HEADERS,
    "Content-Type": "text/html; charset=utf-8",
    "Cache-Control": "no-cache",
  });
}

/**
 * `GET /console/<name>`: one of the console's built files, gzipped when the browser takes it,
 * 304 when its ETag is current.
 * @throws ApiError NOT_FOUND when the console is not built
 */
export async function serveAsset(c: Context<AppEnv>, name: ConsoleAssetName): Promise<Response> {
  let file: Awaited<ReturnType<typeof consoleAssets>>[ConsoleAssetName];
  try {
    file = (await consoleAssets())[name];
  } catch {
    throw new ApiError("NOT_FOUND", "The console is not built: run npm run build");
  }
  const headers: Record<string, string> = {
    ...CONSOLE_HEADERS,
    "Content-Type": file.contentType,
    // The names do not change with the content: the browser asks again, and the ETag answers.
    "Cache-Control": "no-cache",
    ETag: file.etag,
    Vary: "Accept-Encoding",
  };
  if (c.req.header("If-None-Match") === file.etag) return c.body(null, 304, headers);
  if (/\bgzip\b/.test(c.req.header("Accept-Encoding") ?? "")) {
    return c.body(new Uint8Array(file.gzip), 200, { ...headers, "Content-Encoding": "gzip" });
  }
  return c.body(new Uint8Array(file.body), 200, headers);
}

/** Registers `GET /console`, its files, and `/console/` (redirected to `/console`). */
export function registerConsole(app: App): void {
  app.get(CONSOLE_PATH, consolePage);
  // Relative, so that it stays right behind a path prefix.
  app.get(`${CONSOLE_PATH}/`, (c) => c.redirect("../console", 308));
  app.get(`${CONSOLE_PATH}/app.js`, (c) => serveAsset(c, "app.js"));
  app.get(`${CONSOLE_PATH}/app.css`, (c) => serveAsset(c, "app.css"));
}
