/**
 * `node dist/scripts/hrana-server.js --db FILE [--port N] [--token T] [--idle-seconds S]
 * [--lock-timeout-ms MS] [--synchronous FULL|NORMAL] [--log FILE] [--exit-with-stdin]`: the Hrana test server
 * (scripts/lib/hrana/server.ts) as a process of its own. Prints
 * `hrana listening on http://127.0.0.1:PORT` once it listens; stops on SIGTERM/SIGINT, and with
 * `--exit-with-stdin` when its standard input closes (its parent went away). `--log` appends
 * one JSON line per pipeline and statement. Listens on 127.0.0.1 only. See docs/operations.md.
 */
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { startHranaServer } from "./lib/hrana/server.ts";

const { values } = parseArgs({
  options: {
    db: { type: "string" },
    port: { type: "string", default: "0" },
    token: { type: "string" },
    "idle-seconds": { type: "string", default: "10" },
    "lock-timeout-ms": { type: "string", default: "15000" },
    synchronous: { type: "string", default: "FULL" },
    log: { type: "string" },
    "exit-with-stdin": { type: "boolean", default: false },
  },
});
if (!values.db) {
  process.stderr.write("hrana-server: --db FILE is required\n");
  process.exit(2);
}
const logFile = values.log;
const server = await startHranaServer({
  path: values.db,
  port: Number(values.port),
  token: values.token ?? process.env.HRANA_TOKEN,
  idleSeconds: Number(values["idle-seconds"]),
  lockTimeoutMs: Number(values["lock-timeout-ms"]),
  synchronous: values.synchronous === "NORMAL" ? "NORMAL" : "FULL",
  ...(logFile
    ? {
        log: (entry) =>
          appendFileSync(logFile, `${JSON.stringify({ t: performance.now(), ...entry })}\n`),
      }
    : {}),
});
process.stdout.write(`hrana listening on ${server.url}\n`);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
if (values["exit-with-stdin"]) {
  process.stdin.on("end", stop);
  process.stdin.on("error", stop);
  process.stdin.resume();
}
