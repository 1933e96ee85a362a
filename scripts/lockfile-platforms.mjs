#!/usr/bin/env node
/**
 * `npm run lockfile:platforms`: run after any `npm install` that changes package-lock.json.
 *
 * `npm install` on one machine leaves the other platforms' optional dependencies (Biome, Deno,
 * Rollup, libSQL's native addon, Bun, … built for Windows, macOS, musl, other CPUs) out of the
 * lockfile, and `npm ci` elsewhere then refuses the lockfile ("Missing: … from lock file"). This
 * adds each missing optional dependency as an entry at the version its parent pins, with the
 * package's own `os`, `cpu` and `libc`, `integrity` and `license` as the registry states them
 * (`npm view NAME@VERSION … --json`, so the project's registry configuration applies). With
 * `os`/`cpu`/`libc` in the lockfile, `npm ci` skips every entry that does not run on the
 * installing machine instead of downloading it (1.1 GB of other systems' builds without them).
 *
 * Entries this script wrote before (recognised by having no `integrity`: npm writes one for
 * everything it resolved itself) are filled in again, so an old lockfile is repaired too.
 * `scripts/check-platforms.mjs` checks the result. Errors: a registry lookup that fails, or a
 * package that states no `integrity`, stops the script with exit code 1 before anything is
 * written.
 */
import { execFile } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";

const run = promisify(execFile);
const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
/** Parallel registry lookups at once: enough to finish in seconds, few enough to be polite. */
const LOOKUPS_AT_ONCE = 8;

/**
 * The registry's metadata for one version: `{ integrity, os?, cpu?, libc?, license?, engines? }`,
 * the arrays exactly as the package's own package.json declares them.
 */
async function registryFacts(name, version) {
  const { stdout } = await run(
    "npm",
    [
      "view",
      `${name}@${version}`,
      "os",
      "cpu",
      "libc",
      "license",
      "engines",
      "dist.integrity",
      "--json",
    ],
    { maxBuffer: 1 << 20 },
  );
  const view = stdout.trim() === "" ? {} : JSON.parse(stdout);
  const integrity = view["dist.integrity"];
  if (typeof integrity !== "string") throw new Error(`${name}@${version}: no dist.integrity`);
  const list = (value) => (value === undefined ? undefined : [value].flat());
  return {
    integrity,
    cpu: list(view.cpu),
    license: view.license,
    os: list(view.os),
    libc: list(view.libc),
    engines: view.engines,
  };
}

/** Every entry to write: [lockfile path, { version, dev }] for missing or script-written ones. */
function wanted() {
  const found = new Map();
  for (const [path, entry] of Object.entries(lock.packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      const nested = `${path ? `${path}/` : ""}node_modules/${name}`;
      const hoisted = `node_modules/${name}`;
      const at = lock.packages[nested] ? nested : lock.packages[hoisted] ? hoisted : undefined;
      if (at !== undefined && lock.packages[at].integrity !== undefined) continue;
      const target = at ?? hoisted;
      const known = lock.packages[target];
      found.set(target, {
        name,
        version: known?.version ?? version,
        dev: known ? known.dev === true : entry.dev === true,
      });
    }
  }
  return [...found];
}

const todo = wanted();
const facts = new Map();
for (let i = 0; i < todo.length; i += LOOKUPS_AT_ONCE) {
  const slice = todo.slice(i, i + LOOKUPS_AT_ONCE);
  const answers = await Promise.all(slice.map(([, w]) => registryFacts(w.name, w.version)));
  for (const [j, [path]] of slice.entries()) facts.set(path, answers[j]);
}
for (const [path, w] of todo) {
  const f = facts.get(path);
  // The key order npm itself writes, so that its next rewrite of the file changes nothing here.
  const entry = { version: w.version, integrity: f.integrity };
  if (f.cpu) entry.cpu = f.cpu;
  if (w.dev) entry.dev = true;
  if (f.libc) entry.libc = f.libc;
  if (f.license) entry.license = f.license;
  entry.optional = true;
  if (f.os) entry.os = f.os;
  if (f.engines) entry.engines = f.engines;
  lock.packages[path] = entry;
}
// npm keeps the entries sorted by path (the root "" first); a new entry goes in its place.
const byPath = (a, b) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b, "en"));
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => byPath(a, b)));
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
const unmarked = todo.filter(([path]) => !facts.get(path).os && !facts.get(path).cpu);
console.log(
  `lockfile: ${todo.length} optional platform entries written with the registry's os/cpu/libc` +
    (unmarked.length
      ? `; ${unmarked.length} state none: ${unmarked.map(([p]) => p).join(", ")}`
      : ""),
);
