/**
 * `GET /console` and its files (docs/operations.md#operator-console): served without a key, with
 * a Content-Security-Policy that allows this origin only; `/console/` redirects to `/console`;
 * the files answer 304 to their ETag and come gzipped when asked; the page's links are relative.
 * The console's own walk is test/console-browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setConsoleAssets } from "../src/console/assets.ts";
import { makeLedger, type TestLedger } from "./harness.ts";

describe("console routes", () => {
  let t: TestLedger;
  const js = 'console.log("app");';
  const css = "body{color:#123}";

  beforeAll(async () => {
    setConsoleAssets({ "app.js": js, "app.css": css });
    t = await makeLedger();
  });
  afterAll(async () => t.close());

  it("serves the page without a key, with a strict policy and relative links", async () => {
    const res = await t.app.request("/console");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = res.headers.get("content-security-policy") ?? "";
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "img-src 'self' data:",
      "frame-ancestors 'none'",
      "form-action 'none'",
    ]) {
      expect(csp).toContain(directive);
    }
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await res.text();
    expect(html).toContain('<script type="module" src="console/app.js"></script>');
    expect(html).toContain('<link rel="stylesheet" href="console/app.css">');
    expect(html).not.toMatch(/https?:\/\//);
  });

  it("serves the bundle's files with ETags, gzipped when asked", async () => {
    for (const [path, body, type] of [
      ["/console/app.js", js, "text/javascript; charset=utf-8"],
      ["/console/app.css", css, "text/css; charset=utf-8"],
    ] as const) {
      const res = await t.app.request(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe(type);
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
      expect(await res.text()).toBe(body);
      const etag = res.headers.get("etag") ?? "";
      expect(etag).toMatch(/^"[\w-]{27}"$/);
      const again = await t.app.request(path, { headers: { "If-None-Match": etag } });
      expect(again.status).toBe(304);
      const gz = await t.app.request(path, { headers: { "Accept-Encoding": "gzip" } });
      expect(gz.headers.get("content-encoding")).toBe("gzip");
    }
  });

  it("redirects /console/ to /console, relatively", async () => {
    const res = await t.app.request("/console/");
    expect(res.status).toBe(308);
    expect(res.headers.get("location")).toBe("../console");
  });

  it("leaves /v1 behind the key", async () => {
    const res = await t.app.request("/v1/accounts");
    expect(res.status).toBe(401);
  });
});
