/**
 * The API key check of `/v1` (docs/api.md#authentication-and-projects): `X-API-Key` or
 * `Authorization: Bearer` → project; a missing, unknown or revoked key is 401 UNAUTHORIZED. The
 * keys themselves (generating, hashing, storing, revoking) are src/db/api-keys.ts's.
 *
 * A process remembers the keys it found active for `KEY_TRUST_MS` (docs/design.md#api-key-cache),
 * so a request with a known key reads nothing: a key revoked by another process (`ledger keys
 * revoke`, another server) is refused here at most that long after, and one revoked by this
 * process (`revokeKey`, which changes `keyRevocations`) at once. Unknown keys are never
 * remembered, so a new key works at once.
 */
import type { MiddlewareHandler } from "hono";
import type { Kysely } from "kysely";
import { keyRevocations, projectOfKey } from "../db/api-keys.ts";
import type { DB } from "../db/schema.ts";
import { ApiError, UNAUTHORIZED_MESSAGE } from "../errors.ts";
import type { AppEnv } from "./context.ts";

/**
 * Milliseconds a process trusts a key it found active without reading it again: well inside the
 * 5 s within which every process must refuse a key revoked elsewhere.
 */
export const KEY_TRUST_MS = 2000;
/** Most keys one middleware remembers; past it the oldest are forgotten first. */
const MAX_TRUSTED_KEYS = 10_000;

/** A key found active: its project, when it was read (monotonic ms), and the revocations then. */
interface Trusted {
  projectId: string;
  checkedAt: number;
  revocations: number;
}

/**
 * `projectOfKey` with the keys found active remembered for `KEY_TRUST_MS` (keyed by the key
 * itself, so a remembered key is not even hashed again).
 */
function trustedKeys(db: Kysely<DB>) {
  const trusted = new Map<string, Trusted>();
  return async (apiKey: string): Promise<string | null> => {
    const now = performance.now();
    const known = trusted.get(apiKey);
    if (known && now - known.checkedAt < KEY_TRUST_MS && known.revocations === keyRevocations()) {
      return known.projectId;
    }
    const seen = keyRevocations();
    const projectId = await projectOfKey(db, apiKey);
    trusted.delete(apiKey);
    if (projectId === null) return null;
    if (trusted.size >= MAX_TRUSTED_KEYS) {
      const oldest = trusted.keys().next();
      if (!oldest.done) trusted.delete(oldest.value);
    }
    trusted.set(apiKey, { projectId, checkedAt: now, revocations: seen });
    return projectId;
  };
}

/**
 * The key a request presents (docs/api.md#authentication-and-projects): `X-API-Key`, or the
 * token of `Authorization: Bearer <key>` (scheme case-insensitive). An `Authorization` of
 * another scheme carries no key. Both headers present with different keys is a 401.
 * @returns the key, or undefined when the request presents none
 * @throws ApiError UNAUTHORIZED when the two headers disagree
 */
export function presentedKey(header: (name: string) => string | undefined): string | undefined {
  const apiKey = header("X-API-Key");
  const authorization = header("Authorization");
  const bearer =
    authorization === undefined ? undefined : /^Bearer +(\S+) *$/i.exec(authorization)?.[1];
  if (apiKey !== undefined && bearer !== undefined && apiKey !== bearer) {
    throw new ApiError(
      "UNAUTHORIZED",
      "X-API-Key and Authorization: Bearer carry different keys; send one key",
    );
  }
  return apiKey ?? bearer;
}

/** Middleware for /v1: sets `projectId` from the presented key, else throws 401. */
export function requireApiKey(db: Kysely<DB>): MiddlewareHandler<AppEnv> {
  const projectOf = trustedKeys(db);
  return async (c, next) => {
    const key = presentedKey((name) => c.req.header(name));
    const projectId = key && key.length <= 512 ? await projectOf(key) : null;
    if (!projectId) throw new ApiError("UNAUTHORIZED", UNAUTHORIZED_MESSAGE);
    c.set("projectId", projectId);
    await next();
  };
}
