#!/usr/bin/env node
/**
 * `node scripts/check-platforms.mjs [--lockfile-only]`: checks that an install holds only what
 * runs on this machine (.ci/run runs it right after `npm ci`; test/lockfile.test.ts runs the
 * lockfile part).
 *
 * - The lockfile: every entry has the registry's `integrity` (an entry without one was added by
 *   hand, without the package's own `os`/`cpu`/`libc`, and npm would install it everywhere:
 *   `npm run lockfile:platforms` writes them whole), and every optional dependency states `os`
 *   or `cpu`, except the few that run anywhere (PORTABLE_OPTIONAL below, checked by hand).
 * - node_modules (unless `--lockfile-only`): no installed package's own package.json has an
 *   `os`, `cpu` or `libc` that excludes this machine, with npm's rules (a list of allowed
 *   values, `!value` to exclude one; libc is `glibc` or `musl` on Linux).
 *
 * Prints each offender on its own line and exits 1 when there is any; else one summary line.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;

/** Optional dependencies that are not platform builds: they install and run on any system. */
const PORTABLE_OPTIONAL = new Set(["node_modules/@colors/colors", "node_modules/pg-cloudflare"]);

/** This machine's libc as npm names it: `glibc`, `musl`, or undefined off Linux. */
function currentLibc() {
  if (process.platform !== "linux") return undefined;
  const report = process.report?.getReport();
  const header = typeof report === "object" && report !== null ? report.header : undefined;
  return header?.glibcVersionRuntime ? "glibc" : "musl";
}

/** npm-install-checks' rule: `value` passes `list` (`any`, allowed values, `!excluded`). */
function allows(list, value) {
  const entries = [list].flat();
  if (entries.length === 1 && entries[0] === "any") return true;
  let negated = 0;
  let match = false;
  for (const entry of entries) {
    if (entry.startsWith("!")) {
      negated++;
      if (entry.slice(1) === value) return false;
    } else if (entry === value) match = true;
  }
  return match || negated === entries.length;
}

/** Why a package.json's `os`/`cpu`/`libc` exclude this machine, or null when they do not. */
function excluded(pkg, libc) {
  const misses = [];
  if (pkg.os && !allows(pkg.os, process.platform)) misses.push(`os ${JSON.stringify(pkg.os)}`);
  if (pkg.cpu && !allows(pkg.cpu, process.arch)) misses.push(`cpu ${JSON.stringify(pkg.cpu)}`);
  if (pkg.libc && (libc === undefined || !allows(pkg.libc, libc))) {
    misses.push(`libc ${JSON.stringify(pkg.libc)}`);
  }
  return misses.length ? misses.join(", ") : null;
}

/** The lockfile's problems, one sentence each. */
function lockfileProblems() {
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));
  const problems = [];
  const optionalNames = new Set();
  for (const entry of Object.values(lock.packages)) {
    for (const name of Object.keys(entry.optionalDependencies ?? {})) optionalNames.add(name);
  }
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === "" || entry.link) continue;
    if (!entry.integrity) problems.push(`${path}: no integrity (run npm run lockfile:platforms)`);
    const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
    const platformless = !entry.os && !entry.cpu && !entry.libc;
    if (optionalNames.has(name) && platformless && !PORTABLE_OPTIONAL.has(path)) {
      problems.push(`${path}: an optional dependency with no os/cpu/libc`);
    }
  }
  return problems;
}

/** Every package folder under `dir`/node_modules, nested ones included. */
function* packageFolders(dir) {
  const modules = join(dir, "node_modules");
  if (!existsSync(modules)) return;
  for (const name of readdirSync(modules)) {
    if (name.startsWith(".")) continue;
    const at = join(modules, name);
    const folders = name.startsWith("@") ? readdirSync(at).map((n) => join(at, n)) : [at];
    for (const folder of folders) {
      if (!existsSync(join(folder, "package.json"))) continue;
      yield folder;
      yield* packageFolders(folder);
    }
  }
}

/** The installed packages that cannot run here, one sentence each; and how many were seen. */
function installedProblems() {
  const libc = currentLibc();
  const problems = [];
  let seen = 0;
  for (const folder of packageFolders(root)) {
    seen++;
    const pkg = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
    const why = excluded(pkg, libc);
    if (why)
      problems.push(
        `${folder.slice(root.length)}: installed, but its ${why} excludes this machine`,
      );
  }
  return { problems, seen };
}

const lockfileOnly = process.argv.includes("--lockfile-only");
const problems = lockfileProblems();
let summary = "lockfile: every entry has its integrity and every platform build its os/cpu/libc";
if (!lockfileOnly) {
  const installed = installedProblems();
  problems.push(...installed.problems);
  summary +=
    `; node_modules: ${installed.seen} packages, all for ${process.platform} ${process.arch} ${currentLibc() ?? ""}`.trimEnd();
}
for (const problem of problems) console.log(problem);
if (problems.length > 0) {
  console.log(`${problems.length} problem(s)`);
  process.exitCode = 1;
} else console.log(summary);
