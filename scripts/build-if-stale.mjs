#!/usr/bin/env node
/**
 * `npm start`'s prestart: compiles with `tsc -p tsconfig.build.json` only when `dist/` is out of
 * date, so that a start after the first build (`npm ci` runs it as `prepare`) takes no compile
 * time. `dist/` is out of date when a compiled file is missing or older than its `.ts` source in
 * `src/` or `scripts/`, or older than a tsconfig file. Exits with tsc's status when it compiled.
 * Then the operator console's bundle (`dist/console/`, scripts/build-console.ts) is rebuilt when
 * it is missing or older than a file in `console/`.
 * With `--check` it only reports: exit 1 and the reason when out of date, else 0.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Modification time in ms, or -1 when the file does not exist. */
function mtime(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}

/** Every `.ts` file under `dir` (declaration files excepted). */
function sources(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sources(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) found.push(path);
  }
  return found;
}

/** The first reason `dist/` is out of date, or null when it is not. */
function staleness() {
  const configTime = Math.max(
    mtime(join(root, "tsconfig.json")),
    mtime(join(root, "tsconfig.build.json")),
  );
  for (const source of [...sources(join(root, "src")), ...sources(join(root, "scripts"))]) {
    const name = relative(root, source);
    const output = join(root, "dist", name.replace(/\.ts$/, ".js"));
    const built = mtime(output);
    if (built < 0) return `${name} is not compiled`;
    if (built < mtime(source)) return `${name} changed`;
    if (built < configTime) return "the TypeScript configuration changed";
  }
  return null;
}

/** Every file under `dir`. */
function files(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...files(path));
    else found.push(path);
  }
  return found;
}

/** Why the console's bundle is out of date, or null when it is not (or has no sources here). */
function consoleStaleness() {
  if (mtime(join(root, "console")) < 0) return null;
  const built = Math.min(
    mtime(join(root, "dist", "console", "app.js")),
    mtime(join(root, "dist", "console", "app.css")),
  );
  if (built < 0) return "the console is not built";
  for (const source of files(join(root, "console"))) {
    if (built < mtime(source)) return `${relative(root, source)} changed`;
  }
  return null;
}

const reason = staleness();
const consoleReason = consoleStaleness();
if (process.argv.includes("--check")) {
  const why = reason ?? consoleReason;
  process.stdout.write(why === null ? "dist/ is up to date\n" : `dist/ is out of date: ${why}\n`);
  process.exit(why === null ? 0 : 1);
}
if (reason !== null) {
  process.stdout.write(`dist/ is out of date (${reason}): compiling\n`);
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], {
    cwd: root,
    stdio: "inherit",
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
if (consoleReason !== null) {
  process.stdout.write(`${consoleReason}: bundling the console\n`);
  const result = spawnSync(process.execPath, [join(root, "dist", "scripts", "build-console.js")], {
    cwd: root,
    stdio: "inherit",
  });
  process.exit(result.status ?? 1);
}
