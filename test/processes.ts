/**
 * Test helpers that run the service as a user would: the compiled `ledger` command (`dist/`,
 * built by `npm run build`, which `npm test` runs first) in child processes.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { describeDatabase } from "../src/cli/database.ts";

export const cliPath = new URL("../dist/src/cli/index.js", import.meta.url).pathname;

/**
 * What a command that uses the database prints on standard error, and only that when all is
 * well: the line naming the database of `env.DATABASE_URL` (docs/operations.md#command-line).
 */
export function databaseLine(env: NodeJS.ProcessEnv): string {
  return `ledger: database: ${describeDatabase(env.DATABASE_URL ?? "file:./data/ledger.db")}\n`;
}

/** Runs `ledger ARGS…` to completion. */
export function runCli(args: string[], env: NodeJS.ProcessEnv) {
  return spawnSync(process.execPath, [cliPath, ...args], { env, encoding: "utf8" });
}

/** Runs `ledger ARGS…` without blocking the test's event loop. */
export function runCliAsync(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cliPath, ...args], { env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

export interface RunningProcess {
  child: ChildProcess;
  /** The port the service said it listens on. */
  port: number;
  base: string;
  /** Everything written to standard output so far. */
  stdout: () => string;
  /** Everything written to standard error so far. */
  stderr: () => string;
  /** Resolves once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `command args` and waits until it prints `listening on http://ADDRESS:PORT` (the
 * service's start line, on standard error).
 * @throws Error with the output when it exits first or does not listen within `timeoutMs`
 */
export function spawnListening(
  command: string,
  args: string[],
  options: { env: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number },
): Promise<RunningProcess> {
  const child = spawn(command, args, {
    env: options.env,
    cwd: options.cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(`no "listening" within ${options.timeoutMs ?? 30_000} ms:\n${stdout}${stderr}`),
      );
    }, options.timeoutMs ?? 30_000);
    const seen = () => {
      const port = /listening on http:\/\/\S+:(\d+)/.exec(stderr)?.[1];
      if (port) {
        clearTimeout(timer);
        resolve({
          child,
          port: Number(port),
          base: `http://127.0.0.1:${port}`,
          stdout: () => stdout,
          stderr: () => stderr,
          exited,
        });
      }
    };
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
      seen();
    });
    child.stdout?.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code}) before listening:\n${stdout}${stderr}`));
    });
  });
}

/** Starts `ledger serve` with `env` (PORT 0 unless given). */
export function spawnServer(env: NodeJS.ProcessEnv): Promise<RunningProcess> {
  return spawnListening(process.execPath, [cliPath, "serve"], {
    env: { PORT: "0", HOST: "127.0.0.1", ...env },
  });
}

/** Whether `port` on 127.0.0.1 can be bound now (nothing holds it). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

/** Whether a process with this id exists. */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** One structured log line: its fields by name, read and compared one by one. */
export type LogLine = Record<string, unknown>;

/** The JSON lines of a process's standard output (other lines skipped). */
export function jsonLines(text: string): LogLine[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line): LogLine => JSON.parse(line));
}
