/**
 * Starts the Hrana test server (scripts/hrana-server.ts, compiled by `npm run build`) as a child
 * process, for the test suite's remote libSQL runs and the crash test. The child exits when its
 * parent does (it watches its standard input), so a test run that dies leaves no server behind.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The compiled server: dist/scripts/hrana-server.js of this checkout. */
export function hranaServerScript(): string {
  const here = fileURLToPath(import.meta.url);
  const root = here.includes("/dist/")
    ? here.slice(0, here.lastIndexOf("/dist/"))
    : resolve(dirname(here), "../../..");
  return join(root, "dist", "scripts", "hrana-server.js");
}

export interface HranaProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT`. */
  url: string;
  port: number;
  /** SIGTERM, then waits for the exit. */
  stop: () => Promise<void>;
  /** SIGKILL, then waits for the exit. */
  kill: () => Promise<void>;
}

export interface HranaProcessOptions {
  /** The database file. */
  path: string;
  /** 0 (default): a free port; a port number to come back on the same one. */
  port?: number;
  token?: string;
  idleSeconds?: number;
  /** PRAGMA synchronous of the server (default FULL). */
  synchronous?: "FULL" | "NORMAL";
  /** Appends one JSON line per pipeline and statement to this file. */
  logFile?: string;
}

/**
 * Spawns the server and waits until it listens.
 * @throws Error with its output when it exits first or does not listen within 20 s
 */
export function spawnHranaServer(options: HranaProcessOptions): Promise<HranaProcess> {
  const args = [hranaServerScript(), "--db", options.path, "--port", String(options.port ?? 0)];
  if (options.token) args.push("--token", options.token);
  if (options.idleSeconds !== undefined) args.push("--idle-seconds", String(options.idleSeconds));
  if (options.synchronous) args.push("--synchronous", options.synchronous);
  if (options.logFile) args.push("--log", options.logFile);
  args.push("--exit-with-stdin");
  const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const end = (signal: NodeJS.Signals) => async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  let output = "";
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the Hrana server did not listen within 20 s:\n${output}`));
    }, 20_000);
    child.stderr?.on("data", (d: Buffer) => {
      output += d.toString();
    });
    child.stdout?.on("data", (d: Buffer) => {
      output += d.toString();
      const match = /hrana listening on (http:\/\/[\d.]+:(\d+))/.exec(output);
      if (match?.[1] && match[2]) {
        clearTimeout(timer);
        resolvePromise({
          child,
          url: match[1],
          port: Number(match[2]),
          stop: end("SIGTERM"),
          kill: end("SIGKILL"),
        });
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the Hrana server exited (${code}) before listening:\n${output}`));
    });
  });
}
