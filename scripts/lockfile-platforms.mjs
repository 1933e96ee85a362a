#!/usr/bin/env node
/**
 * `npm run lockfile:platforms`: run after any `npm install` that changes package-lock.json.
 *
 * The npm registry reachable from this workplace serves only this platform's builds of packages
 * such as libsql, biome and rollup, so `npm install` leaves the other platforms' optional
 * dependencies out of the lockfile, and `npm ci` then refuses the lockfile ("Missing: … from
 * lock file"). This adds each missing optional dependency as an optional entry at the version
 * its parent pins; `npm ci` then validates, and skips entries it cannot install on this platform.
 */
import { readFileSync, writeFileSync } from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
let added = 0;
for (const [path, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${path ? `${path}/` : ""}node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (lock.packages[nested] || lock.packages[hoisted]) continue;
    lock.packages[hoisted] = { version, optional: true, ...(entry.dev ? { dev: true } : {}) };
    added++;
  }
}
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lockfile: ${added} optional platform entries added`);
