/**
 * Resolving a host name to the addresses a connection could use: the type the webhook target
 * check takes (src/webhooks/targets.ts, docs/api.md#webhook-targets), so that tests can give
 * their own resolver, and the system's. On the ground floor, so that the HTTP layer's
 * dependencies and the runtime can name it without importing the webhooks module.
 */
import { lookup } from "node:dns/promises";

/** One address a name resolves to, as `dns.lookup` answers it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves a host name to every address a connection could use.
 * @throws Error (with a system `code` such as `ENOTFOUND`) when the name does not resolve
 */
export type ResolveHost = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver: every address of `hostname` (IPv4 and IPv6), in the system's order. */
export const systemResolveHost: ResolveHost = async (hostname) => {
  const found = await lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};
