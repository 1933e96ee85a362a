/**
 * Which addresses a webhook may reach (docs/api.md#webhook-targets): only public ones. A target
 * whose host is, or resolves to, a loopback, private, link-local, unspecified or otherwise
 * non-public address is refused, at creation (a 400) and again at every delivery, where the
 * address checked is the address connected to (src/webhooks/send.ts).
 *
 * The ranges are those the IANA special-purpose address registries mark as not globally
 * reachable, matched with Node's `net.BlockList`; an IPv6 address that carries an IPv4 one
 * (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the IPv4
 * address inside, and any IPv6 address outside global unicast (`2000::/3`) is refused. Host
 * names are lower-cased with trailing dots removed; `localhost` and `*.localhost` are loopback
 * names and refused without asking DNS. URL parsing has already turned the decimal, octal and
 * hexadecimal spellings of an IPv4 address (`http://2130706433/`, `http://0x7f.1/`) into
 * dotted form.
 */
import { BlockList, isIP } from "node:net";
import { type ResolvedAddress, type ResolveHost, systemResolveHost } from "../resolve-host.ts";

/** How targets are judged: `allowPrivate` (WEBHOOK_ALLOW_PRIVATE) lifts the rule. */
export interface TargetPolicy {
  allowPrivate: boolean;
  /** The resolver (default: the system's, `dns.lookup` with every address). */
  resolveHost?: ResolveHost;
}

/** A target ready to connect to: the URL and the checked address its host stands for. */
export interface CheckedTarget {
  url: URL;
  /** The host as the URL names it, without IPv6 brackets or trailing dots. */
  hostname: string;
  address: string;
  family: 4 | 6;
}

/** Why a target may not be reached, as said in a 400's details and a delivery's `lastError`. */
export class TargetRefused extends Error {
  override readonly name = "TargetRefused";
}

type Family = "ipv4" | "ipv6";

/** [first address, prefix length, what the range is], per family. */
const V4_RANGES: [string, number, string][] = [
  ["0.0.0.0", 8, "unspecified"],
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "shared (carrier-grade NAT)"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link-local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"],
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "reserved"],
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"],
];

const V6_RANGES: [string, number, string][] = [
  ["::", 128, "unspecified"],
  ["::1", 128, "loopback"],
  ["64:ff9b:1::", 48, "reserved (local NAT64)"],
  ["100::", 64, "reserved (discard)"],
  ["2001::", 23, "reserved"],
  ["2001:db8::", 32, "documentation"],
  ["3fff::", 20, "documentation"],
  ["5f00::", 16, "reserved"],
  ["fc00::", 7, "private (unique local)"],
  ["fe80::", 10, "link-local"],
  ["fec0::", 10, "site-local"],
  ["ff00::", 8, "multicast"],
];

/** One BlockList per kind of range, so that a match names its kind. */
function rangeLists(ranges: [string, number, string][], family: Family) {
  const lists = new Map<string, BlockList>();
  for (const [address, prefix, kind] of ranges) {
    let list = lists.get(kind);
    if (!list) {
      list = new BlockList();
      lists.set(kind, list);
    }
    list.addSubnet(address, prefix, family);
  }
  return [...lists.entries()];
}

const V4_LISTS = rangeLists(V4_RANGES, "ipv4");
const V6_LISTS = rangeLists(V6_RANGES, "ipv6");
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet("2000::", 3, "ipv6");

/**
 * What kind of non-public address `address` is (`loopback`, `private`, `link-local`, …), or
 * undefined for a public one. Accepts IPv4 dotted quads and IPv6 text (a zone `%eth0` is
 * ignored); anything else is `not an IP address`.
 */
export function nonPublicKind(address: string): string | undefined {
  const bare = address.replace(/%.*$/, "");
  const version = isIP(bare);
  if (version === 4) return v4Kind(bare);
  if (version !== 6) return "not an IP address";
  const groups = ipv6Groups(bare);
  if (!groups) return "not an IP address";
  const inner = embeddedV4(groups);
  if (inner) {
    const kind = v4Kind(inner.address);
    return kind === undefined ? undefined : `${inner.how} ${kind}`;
  }
  for (const [kind, list] of V6_LISTS) if (list.check(bare, "ipv6")) return kind;
  return GLOBAL_UNICAST.check(bare, "ipv6") ? undefined : "reserved";
}

function v4Kind(address: string): string | undefined {
  for (const [kind, list] of V4_LISTS) if (list.check(address, "ipv4")) return kind;
  return undefined;
}

/**
 * The eight 16-bit groups of an IPv6 address (`::` expanded, a trailing dotted IPv4 part
 * turned into two groups), or undefined when the text is not one.
 */
export function ipv6Groups(text: string): number[] | undefined {
  let body = text;
  const tail: number[] = [];
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(body);
  if (dotted?.[1] && dotted[2]) {
    if (isIP(dotted[2]) !== 4) return undefined;
    const [a = 0, b = 0, c = 0, d = 0] = dotted[2].split(".").map(Number);
    tail.push((a << 8) | b, (c << 8) | d);
    body = dotted[1].endsWith("::") ? dotted[1] : dotted[1].slice(0, -1);
  }
  const halves = body.split("::");
  if (halves.length > 2) return undefined;
  const parse = (part: string | undefined) =>
    part
      ? part.split(":").map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? Number.parseInt(g, 16) : -1))
      : [];
  const head = parse(halves[0]);
  const rest = [...parse(halves[1]), ...tail];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<number>(halves.length === 1 ? 0 : missing).fill(0), ...rest];
  return groups.some((g) => g < 0) ? undefined : groups;
}

/** The IPv4 address an IPv6 address carries, when it is one of the forms that carry one. */
function embeddedV4(groups: number[]): { address: string; how: string } | undefined {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups;
  const quad = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) {
    return { address: quad(g6, g7), how: "IPv4-mapped" };
  }
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) {
    return { address: quad(g6, g7), how: "NAT64 of a" };
  }
  if (g0 === 0x2002 && g1 !== undefined && g2 !== undefined) {
    return { address: quad(g1, g2), how: "6to4 of a" };
  }
  return undefined;
}

/** The URL's host without IPv6 brackets and trailing dots, lower-cased. */
export function bareHostname(url: URL): string {
  const host = url.hostname.toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) return host.slice(1, -1);
  return host.replace(/\.+$/, "");
}

/** True for `localhost` and its subdomains, which name the machine itself. */
function isLoopbackName(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost");
}

/** Why a resolved address is refused, for `lastError` and the 400's details. */
function refusal(address: string, kind: string): TargetRefused {
  return new TargetRefused(`not a public address: ${address} (${kind})`);
}

/**
 * What the URL's host itself says, before any DNS: a literal address (checked), a loopback
 * name (refused), or a name to resolve.
 * @throws TargetRefused for a non-public literal address or a loopback name (unless allowed)
 */
function literalTarget(url: URL, policy: TargetPolicy): CheckedTarget | { name: string } {
  const hostname = bareHostname(url);
  const version = isIP(hostname);
  if (version === 4 || version === 6) {
    const kind = policy.allowPrivate ? undefined : nonPublicKind(hostname);
    if (kind !== undefined) throw refusal(hostname, kind);
    return { url, hostname, address: hostname, family: version };
  }
  if (!policy.allowPrivate && isLoopbackName(hostname)) {
    throw new TargetRefused(`not a public address: ${hostname} (a loopback name)`);
  }
  return { name: hostname };
}

/**
 * Checks every address in `addresses` and picks the one to connect to (the first).
 * @throws TargetRefused when any address is not public (unless allowed) or there is none
 */
function checkedAddress(
  url: URL,
  hostname: string,
  addresses: ResolvedAddress[],
  policy: TargetPolicy,
) {
  const first = addresses[0];
  if (!first) throw new TargetRefused("ENOTFOUND");
  if (!policy.allowPrivate) {
    for (const { address } of addresses) {
      const kind = nonPublicKind(address);
      if (kind !== undefined) throw refusal(address, kind);
    }
  }
  return { url, hostname, address: first.address, family: first.family };
}

/**
 * Resolves `url`'s host once and checks every address, for a delivery attempt.
 * @param timeoutMs how long resolution may take
 * @returns the checked target (connect to its `address`, nothing else)
 * @throws TargetRefused (`not a public address: …`), or a resolver error (`ENOTFOUND`, …)
 */
export async function resolveTarget(
  url: URL,
  policy: TargetPolicy,
  timeoutMs: number,
): Promise<CheckedTarget> {
  const literal = literalTarget(url, policy);
  if (!("name" in literal)) return literal;
  const resolve = policy.resolveHost ?? systemResolveHost;
  const addresses = await withTimeout(resolve(literal.name), timeoutMs);
  return checkedAddress(url, literal.name, addresses, policy);
}

/** How long creating a webhook waits for its host to resolve before accepting it unchecked. */
export const CREATION_RESOLVE_MS = 2000;

/**
 * The check made when a webhook is created: the literal host, then what the name resolves to
 * now. A name that does not resolve (or not within CREATION_RESOLVE_MS) is accepted; it is
 * checked again at every delivery.
 * @returns why the target is refused, or undefined when it is accepted
 */
export async function creationProblem(url: URL, policy: TargetPolicy): Promise<string | undefined> {
  try {
    const literal = literalTarget(url, policy);
    if (!("name" in literal) || policy.allowPrivate) return undefined;
    const resolve = policy.resolveHost ?? systemResolveHost;
    let addresses: ResolvedAddress[];
    try {
      addresses = await withTimeout(resolve(literal.name), CREATION_RESOLVE_MS);
    } catch {
      return undefined;
    }
    if (addresses.length > 0) checkedAddress(url, literal.name, addresses, policy);
    return undefined;
  } catch (err) {
    if (err instanceof TargetRefused) return err.message;
    throw err;
  }
}

/** `work`, or an `ETIMEOUT` error after `ms`. */
async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error("resolution timed out"), { code: "ETIMEOUT" })),
      ms,
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
