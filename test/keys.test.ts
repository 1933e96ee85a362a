/**
 * `ledger keys`: create prints the key's id with --json, list shows keys by id and never a
 * secret or hash, revoke takes the key or its id, and a revoked key stops authenticating.
 * Runs the compiled command (`npm run build`).
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { projectOfKey } from "../src/db/api-keys.ts";
import { openLedger } from "../src/runtime.ts";
import { runCli } from "./processes.ts";

interface Listing {
  keys: {
    keyId: string;
    projectId: string;
    projectName: string;
    createdAt: string;
    revokedAt: string | null;
  }[];
}

describe("ledger keys", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const run = (...args: string[]) => runCli(args, env);
  const create = (project: string) => {
    const r = run("keys", "create", "--project", project, "--json");
    expect(r.status).toBe(0);
    return JSON.parse(r.stdout) as { projectId: string; keyId: string; apiKey: string };
  };
  const list = (...args: string[]) => {
    const r = run("keys", "list", "--json", ...args);
    expect(r.status).toBe(0);
    return { listing: JSON.parse(r.stdout) as Listing, stdout: r.stdout };
  };
  const authenticates = async (apiKey: string) => {
    const ledger = await openLedger(loadConfig({ DATABASE_URL: env.DATABASE_URL }));
    try {
      return await projectOfKey(ledger.db.read, apiKey);
    } finally {
      await ledger.close();
    }
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "ledger-keys-"));
    env = { ...process.env, DATABASE_URL: `file:${join(dir, "l.db")}`, LOG_LEVEL: "silent" };
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("create --json prints exactly projectId, keyId and apiKey", () => {
    const r = run("keys", "create", "--project", "acme", "--json");
    const out = JSON.parse(r.stdout);
    expect(Object.keys(out)).toEqual(["projectId", "keyId", "apiKey"]);
    expect(out.projectId).toMatch(/^prj_/);
    expect(out.keyId).toMatch(/^key_/);
    expect(out.apiKey).toMatch(/^ldg_[\w-]{43}$/);
  });

  it("list --json shows every key by id, by project, and never a secret or a hash", async () => {
    const a1 = create("acme");
    const b1 = create("beta");
    const a2 = create("acme");
    const { listing, stdout } = list();
    expect(listing).toEqual({
      keys: [a1, b1, a2].map((k, i) => ({
        keyId: k.keyId,
        projectId: k.projectId,
        projectName: i === 1 ? "beta" : "acme",
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        revokedAt: null,
      })),
    });
    for (const k of [a1, b1, a2]) {
      expect(stdout).not.toContain(k.apiKey);
      expect(stdout).not.toContain(createHash("sha256").update(k.apiKey).digest("hex"));
    }
    expect(list("--project", "acme").listing.keys.map((k) => k.keyId)).toEqual([
      a1.keyId,
      a2.keyId,
    ]);
    const text = run("keys", "list");
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(a1.keyId);
    expect(text.stdout).not.toContain(a1.apiKey);
    const unknown = run("keys", "list", "--project", "nope", "--json");
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("no project named nope");
  });

  it("revoke takes the id shown by list, or the key; a revoked key no longer authenticates", async () => {
    const byId = create("acme");
    const byKey = create("acme");
    const kept = create("acme");
    expect(await authenticates(byId.apiKey)).toBe(byId.projectId);

    const r = run("keys", "revoke", byId.keyId);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`key ${byId.keyId} revoked\n`);
    expect(run("keys", "revoke", byKey.apiKey).stdout).toBe(`key ${byKey.keyId} revoked\n`);
    // Exactly once: a second revoke finds no active key.
    const again = run("keys", "revoke", byId.keyId);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("no active key matches");

    const keys = list().listing.keys;
    const revokedAt = (id: string) => keys.find((k) => k.keyId === id)?.revokedAt;
    expect(revokedAt(byId.keyId)).toMatch(/^\d{4}-.*Z$/);
    expect(revokedAt(byKey.keyId)).toMatch(/^\d{4}-.*Z$/);
    expect(revokedAt(kept.keyId)).toBeNull();
    expect(await authenticates(byId.apiKey)).toBeNull();
    expect(await authenticates(byKey.apiKey)).toBeNull();
    expect(await authenticates(kept.apiKey)).toBe(kept.projectId);
  });
});
