/**
 * `node dist/scripts/hrana-host.js`: many Hrana test servers (scripts/lib/hrana/server.ts) in
 * one process, started and stopped on request, for the test suite's remote libSQL run, where
 * every test ledger gets a server of its own: starting a process per ledger cost about 0.3 s of
 * each test. Each server still has its own file, port, token and streams; only the process is
 * shared. A test that kills or restarts a server spawns one of its own (process.ts).
 *
 * Requests and answers are JSON lines, on standard input and output, matched by `id`:
 * - `{"id":1,"op":"start","path":"/tmp/…/ledger.db","token":"…","synchronous":"NORMAL"}` answers
 *   `{"id":1,"url":"http://127.0.0.1:PORT","port":PORT}` once that server listens;
 * - `{"id":2,"op":"stop","port":PORT}` answers `{"id":2}` once it is closed;
 * - a failure answers `{"id":…,"error":"…"}`.
 * The process ends, closing every server, when its standard input closes (its parent went away).
 */
import { createInterface } from "node:readline";
import { type HranaServer, startHranaServer } from "./lib/hrana/server.ts";

interface HostRequest {
  id: number;
  op: "start" | "stop";
  path?: string;
  token?: string;
  synchronous?: "FULL" | "NORMAL";
  port?: number;
}

const servers = new Map<number, HranaServer>();

/** Carries out one request. @returns the answer's fields besides `id` */
async function carryOut(request: HostRequest): Promise<object> {
  if (request.op === "start") {
    if (request.path === undefined) throw new Error("start needs a path");
    const server = await startHranaServer({
      path: request.path,
      token: request.token,
      synchronous: request.synchronous ?? "FULL",
    });
    servers.set(server.port, server);
    return { url: server.url, port: server.port };
  }
  const server = servers.get(request.port ?? -1);
  servers.delete(request.port ?? -1);
  await server?.close();
  return {};
}

const answer = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);

createInterface({ input: process.stdin })
  .on("line", (line) => {
    const request = JSON.parse(line) as HostRequest;
    carryOut(request).then(
      (fields) => answer({ id: request.id, ...fields }),
      (err: unknown) => answer({ id: request.id, error: String(err) }),
    );
  })
  .on("close", () => {
    Promise.allSettled([...servers.values()].map((s) => s.close())).then(() => process.exit(0));
  });
