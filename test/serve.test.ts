/**
 * The runtime-aware HTTP adapter, on Node (the runtime vitest runs on): a bound port, and a
 * close() that refuses new connections but lets the request in flight answer. Bun and Deno run
 * the same checks through `npm run smoke` (see docs/operations.md#runtimes).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { currentRuntime, serveHttp } from "../src/http/serve.ts";

describe("serveHttp", () => {
  it("serves on Node and closes gracefully, waiting for the request in flight", async () => {
    const server = await serveHttp({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (request) => {
        if (new URL(request.url).pathname === "/slow") await sleep(300);
        return new Response("ok");
      },
    });
    expect(currentRuntime()).toBe("node");
    expect(server.runtime).toBe("node");
    expect(server.port).toBeGreaterThan(0);
    const base = `http://127.0.0.1:${server.port}`;
    expect(await (await fetch(`${base}/fast`)).text()).toBe("ok");

    const slow = fetch(`${base}/slow`).then(async (r) => [r.status, await r.text()]);
    await sleep(50);
    let closed = false;
    const closing = server.close().then(() => {
      closed = true;
    });
    await sleep(50);
    await expect(fetch(`${base}/fast`)).rejects.toThrow();
    expect(closed).toBe(false);
    expect(await slow).toEqual([200, "ok"]);
    await closing;
    expect(closed).toBe(true);
  });

  it("rejects when the port is taken", async () => {
    const first = await serveHttp({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    await expect(
      serveHttp({ port: first.port, hostname: "127.0.0.1", fetch: () => new Response() }),
    ).rejects.toThrow(/EADDRINUSE/);
    await first.close();
  });
});
