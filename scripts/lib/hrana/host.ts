/**
 * The client side of the Hrana host (scripts/hrana-host.ts, compiled by `npm run build`): one
 * child process per test process, started on first use, in which each `startHostedServer` call
 * starts a Hrana test server of its own. The child ends when this process does (its standard
 * input closes).
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { hranaServerScript } from "./process.ts";

/** A server in the host: its URL and port, and how to stop it. */
export interface HostedServer {
  url: string;
  port: number;
  /** Closes the server (its streams, then its file). */
  stop: () => Promise<void>;
}

interface Answer {
  id: number;
  url?: string;
  port?: number;
  error?: string;
}

let host: { child: ChildProcess; waiting: Map<number, (a: Answer) => void> } | undefined;
let nextId = 1;

function theHost(): NonNullable<typeof host> {
  if (host !== undefined && host.child.exitCode === null) return host;
  const script = join(dirname(hranaServerScript()), "hrana-host.js");
  const child = spawn(process.execPath, [script], { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map<number, (a: Answer) => void>();
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
    const answer = JSON.parse(line) as Answer;
    waiting.get(answer.id)?.(answer);
    waiting.delete(answer.id);
  });
  child.once("exit", (code) => {
    for (const settle of waiting.values()) settle({ id: 0, error: `the host exited (${code})` });
    waiting.clear();
  });
  // Neither the child nor its pipes keep this process alive.
  child.unref();
  (child.stdin as Socket | null)?.unref();
  (child.stdout as Socket | null)?.unref();
  host = { child, waiting };
  return host;
}

/** Sends one request to the host. @throws Error with the host's message when it failed */
function ask(request: object): Promise<Answer> {
  const { child, waiting } = theHost();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, (answer) =>
      answer.error === undefined ? resolve(answer) : reject(new Error(answer.error)),
    );
    child.stdin?.write(`${JSON.stringify({ id, ...request })}\n`);
  });
}

/**
 * Starts a Hrana test server over the SQLite file `path` in this process's host.
 * @throws Error when the host could not start it
 */
export async function startHostedServer(options: {
  path: string;
  token?: string;
  synchronous?: "FULL" | "NORMAL";
}): Promise<HostedServer> {
  const { url, port } = await ask({ op: "start", ...options });
  if (url === undefined || port === undefined) throw new Error("the host answered no server");
  return { url, port, stop: async () => void (await ask({ op: "stop", port })) };
}
