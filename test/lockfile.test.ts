/**
 * The lockfile installs only what runs on the installing machine (docs/operations.md,
 * "Installing"): every entry carries the registry's integrity, and every platform build its
 * package's own `os`/`cpu`/`libc`, so that `npm ci` skips the other systems' builds. The check
 * is scripts/check-platforms.mjs, which .ci/run also runs over node_modules after `npm ci`.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const script = new URL("../scripts/check-platforms.mjs", import.meta.url).pathname;
const lockfile = new URL("../package-lock.json", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "ledger-lockfile-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the check over a copy of the repository's lockfile changed by `edit`. */
async function check(edit: (packages: Record<string, Record<string, unknown>>) => void) {
  const lock = JSON.parse(readFileSync(lockfile, "utf8")) as {
    packages: Record<string, Record<string, unknown>>;
  };
  edit(lock.packages);
  const copy = mkdtempSync(join(dir, "repo-"));
  await mkdir(join(copy, "scripts"));
  writeFileSync(join(copy, "package-lock.json"), JSON.stringify(lock));
  writeFileSync(join(copy, "scripts", "check-platforms.mjs"), readFileSync(script));
  return spawnSync(
    process.execPath,
    [join(copy, "scripts", "check-platforms.mjs"), "--lockfile-only"],
    {
      encoding: "utf8",
    },
  );
}

describe("package-lock.json", () => {
  it("gives every platform build its os/cpu/libc and every entry its integrity", async () => {
    const r = await check(() => {});
    expect(r.stdout).toContain("every platform build its os/cpu/libc");
    expect(r.status).toBe(0);
  });

  it("would be refused with an entry written as lockfile:platforms once wrote them", async () => {
    const r = await check((packages) => {
      packages["node_modules/@biomejs/cli-win32-x64"] = {
        version: "2.6.8",
        dev: true,
        optional: true,
      };
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("node_modules/@biomejs/cli-win32-x64: no integrity");
    expect(r.stdout).toContain(
      "node_modules/@biomejs/cli-win32-x64: an optional dependency with no os/cpu/libc",
    );
  });
});
