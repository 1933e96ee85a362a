/**
 * The account's ledger (`GET /v1/transactions`): newest first, 20 to a page, within an optional
 * date range (both days included, UTC). Reversals (docs/api.md#reversals, contract section 23):
 *
 * - each entry the console may reverse (../reversals.ts) has a "Reverse" button, which opens a
 *   confirmation with the amount prefilled (reverse-action.tsx); once it is booked, the ledger
 *   and the account's balances are read again;
 * - a reversal links to its original, and an entry with reversals links to them: both links
 *   open the entry's thread (`#/accounts/<id>/transactions/<transactionId>`), the entry and its
 *   reversals (`reversalOf=<transactionId>`), paged.
 *
 * A pool's entry booked for a member below it names the member (`onBehalfOf`, a link to its
 * page), and each half of a transfer is marked with the transfer's id (`transferId`; a transfer
 * cannot be reversed): each in a column of its own while the rows shown have one.
 *
 * The list has no filter by id: an entry not on the pages already read is looked for in the
 * account's ledger, newest first up to its first reversal's day, 500 entries a request, at most
 * 10,000 entries.
 */
import { useEffect, useRef, useState } from "hono/jsx/dom";
import { call } from "../api.ts";
import { Amount, type Column, DataTable, Pager, Status, useLoad, When } from "../components.tsx";
import { isReversal, reversibleAmount } from "../reversals.ts";
import type { Pagination, ReverseAnswer, Transaction } from "../types.ts";
import { partyColumns } from "./ledger-parties.tsx";
import { ReversePanel } from "./reverse-action.tsx";

const PAGE = 20;
/** How an entry not yet seen is looked for: pages of 500 (the list's most), at most 20. */
const SEARCH_PAGE = 500;
const SEARCH_PAGES = 20;

interface Range {
  startDate: string;
  endDate: string;
}

interface ListAnswer {
  items: Transaction[];
  pagination: Pagination;
}

/** The console's address of an account's ledger, or of one entry's thread in it. */
export function ledgerHref(accountId: string, transactionId?: string): string {
  const account = `#/accounts/${encodeURIComponent(accountId)}`;
  return transactionId === undefined
    ? account
    : `${account}/transactions/${encodeURIComponent(transactionId)}`;
}

/** What the ledger shows: a page of the ledger, or an entry's thread. */
interface View {
  rows: Transaction[];
  pagination: Pagination;
  /** The thread's entry: found, not in the ledger (`absent`), or past the search (`beyond`). */
  thread?: { id: string; entry: Transaction | "absent" | "beyond" };
}

/**
 * Looks for entry `id` in the account's ledger, newest first, up to `endDate` (a UTC day,
 * included) when given. @returns it, `absent` when the ledger has none, `beyond` when the search
 * stopped first
 */
async function findEntry(
  accountId: string,
  id: string,
  endDate: string | undefined,
): Promise<Transaction | "absent" | "beyond"> {
  for (let page = 0; page < SEARCH_PAGES; page++) {
    const answer = await call<ListAnswer>("GET", "v1/transactions", {
      query: { accountId, endDate, limit: SEARCH_PAGE, offset: page * SEARCH_PAGE },
    });
    const found = answer.items.find((t) => t.id === id);
    if (found) return found;
    if (!answer.pagination.hasMore) return "absent";
  }
  return "beyond";
}

/** The cell of a reversal (a link to its original) or of an entry with reversals (a link to them). */
function ReversalLinks({
  entry,
  accountId,
  rows,
  thread,
}: {
  entry: Transaction;
  accountId: string;
  rows: readonly Transaction[];
  thread: string | undefined;
}) {
  if (isReversal(entry) && entry.reversalOf) {
    return (
      <span>
        Reverses{" "}
        <a href={ledgerHref(accountId, entry.reversalOf)}>
          <code>{entry.reversalOf}</code>
        </a>
      </span>
    );
  }
  const reversed = entry.amountReversed;
  const hasReversed = reversed !== undefined && String(reversed) !== "0";
  // Reversals on this page name it even where the API does not send `amountReversed`.
  if (!hasReversed && !rows.some((r) => r.reversalOf === entry.id)) return "–";
  return (
    <span class="reversed">
      {hasReversed && (
        <span>
          <Amount value={reversed} /> reversed
        </span>
      )}{" "}
      {entry.id === thread ? null : (
        <a href={ledgerHref(accountId, entry.id)} aria-label={`Reversals of ${entry.id}`}>
          Reversals
        </a>
      )}
    </span>
  );
}

export function LedgerSection({
  accountId,
  externalId,
  version,
  thread,
  onReversed,
}: {
  accountId: string;
  externalId: string;
  version: number;
  /** The entry whose thread is shown (from the address), or undefined for the ledger. */
  thread?: string | undefined;
  /** After a reversal is booked: the account's sections read it again. */
  onReversed: () => void;
}) {
  const [range, setRange] = useState<Range>({ startDate: "", endDate: "" });
  const [offset, setOffset] = useState(0);
  const [threadOffset, setThreadOffset] = useState(0);
  const [target, setTarget] = useState<Transaction | null>(null);
  const [notice, setNotice] = useState<ReverseAnswer | null>(null);
  // The entries of the pages read, by id: a thread's entry is looked for here first.
  const seen = useRef(new Map<string, Transaction>());
  const section = useRef<HTMLElement>(null);
  const shownThread = useRef<string | undefined>(undefined);

  const loaded = useLoad(async (): Promise<View> => {
    const known = seen.current ?? new Map<string, Transaction>();
    if (thread === undefined) {
      const page = await call<ListAnswer>("GET", "v1/transactions", {
        query: {
          accountId,
          limit: PAGE,
          offset,
          startDate: range.startDate || undefined,
          endDate: range.endDate || undefined,
        },
      });
      for (const t of page.items) known.set(t.id, t);
      return { rows: page.items, pagination: page.pagination };
    }
    const page = await call<ListAnswer>("GET", "v1/transactions", {
      query: { accountId, reversalOf: thread, limit: PAGE, offset: threadOffset },
    });
    const reversals = page.items.filter((t) => t.reversalOf === thread);
    for (const t of reversals) known.set(t.id, t);
    // The entry is older than its reversals: looked for up to the oldest one's day.
    const oldest = reversals.at(-1)?.createdAt.slice(0, 10);
    const entry = known.get(thread) ?? (await findEntry(accountId, thread, oldest));
    if (typeof entry !== "string") known.set(entry.id, entry);
    const rows = typeof entry === "string" ? reversals : [entry, ...reversals];
    return { rows, pagination: page.pagination, thread: { id: thread, entry } };
  }, [accountId, offset, range.startDate, range.endDate, version, thread, threadOffset]);

  // Another thread (or back to the ledger): its first page, and the ledger in sight.
  useEffect(() => {
    setThreadOffset(0);
    setTarget(null);
    if (thread !== shownThread.current) section.current?.scrollIntoView({ block: "start" });
    shownThread.current = thread;
  }, [thread]);

  const apply = (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const value = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value;
    setRange({ startDate: value("startDate"), endDate: value("endDate") });
    setOffset(0);
  };

  const reversed = (answer: ReverseAnswer) => {
    // The original's reversals now add up to the answer's `amountReversed`.
    const original = seen.current?.get(answer.reversedTransactionId);
    if (original) {
      seen.current?.set(original.id, { ...original, amountReversed: answer.amountReversed });
    }
    setTarget(null);
    setNotice(answer);
    onReversed();
  };

  const view = loaded.data;
  const rows = view?.rows ?? [];
  const columns: Column<Transaction>[] = [
    { label: "Date", cell: (t) => <When at={t.createdAt} /> },
    { label: "Type", cell: (t) => <span class={`badge ${t.type}`}>{t.type}</span> },
    {
      label: "Amount",
      end: true,
      cell: (t) => <Amount value={t.amount} sign={t.type === "debit" ? "−" : "+"} />,
    },
    { label: "Balance after", end: true, cell: (t) => <Amount value={t.balanceAfter} /> },
    { label: "Description", cell: (t) => t.description },
    ...partyColumns(rows),
    {
      label: "Reversals",
      cell: (t) => <ReversalLinks entry={t} accountId={accountId} rows={rows} thread={thread} />,
    },
    {
      label: "Action",
      hideLabel: true,
      cell: (t) =>
        reversibleAmount(t) === null ? null : (
          <button
            type="button"
            aria-label={`Reverse ${t.id}`}
            aria-pressed={target?.id === t.id}
            onClick={() => {
              setNotice(null);
              setTarget(t);
            }}
          >
            Reverse
          </button>
        ),
    },
  ];
  const left = target ? reversibleAmount(target) : null;
  const entry = view?.thread?.entry;

  return (
    <section aria-labelledby="ledger" ref={section}>
      <h2 id="ledger">Ledger</h2>
      {thread === undefined ? (
        <form class="inline" onSubmit={apply} aria-label="Ledger dates">
          <label for="ledger-from">From</label>
          <input id="ledger-from" name="startDate" type="date" value={range.startDate} />
          <label for="ledger-to">To</label>
          <input id="ledger-to" name="endDate" type="date" value={range.endDate} />
          <button type="submit">Show</button>
        </form>
      ) : (
        <div class="thread">
          <p>
            Transaction <code>{thread}</code> and its reversals.
          </p>
          <a href={ledgerHref(accountId)}>← The whole ledger</a>
        </div>
      )}
      <Status loaded={loaded} />
      {entry === "absent" && (
        <p class="muted">
          This account's ledger has no transaction <code>{thread}</code>.
        </p>
      )}
      {entry === "beyond" && (
        <p class="muted">
          Transaction <code>{thread}</code> is not among this account's newest{" "}
          <Amount value={SEARCH_PAGE * SEARCH_PAGES} /> entries before its reversals.
        </p>
      )}
      {view && rows.length === 0 && (
        <p class="muted">{thread === undefined ? "No transactions." : "No reversals."}</p>
      )}
      {rows.length > 0 && (
        <DataTable
          label="Ledger"
          columns={columns}
          rows={rows}
          rowKey={(t) => t.id}
          rowClass={(t) => (t.id === target?.id || t.id === thread ? "chosen" : undefined)}
        />
      )}
      {target && left !== null && (
        <ReversePanel
          transaction={target}
          left={left}
          externalId={externalId}
          onDone={reversed}
          onCancel={() => setTarget(null)}
        />
      )}
      {notice && (
        <p class="notice" role="status">
          Reversed <Amount value={notice.transaction.amount} /> credits of{" "}
          <a href={ledgerHref(accountId, notice.reversedTransactionId)}>
            <code>{notice.reversedTransactionId}</code>
          </a>{" "}
          (reversed so far: <Amount value={notice.amountReversed} />; still reversible:{" "}
          <Amount value={notice.reversible} />
          ). Balance: <Amount value={notice.balance} />, available:{" "}
          <Amount value={notice.available} />.
        </p>
      )}
      <Pager
        label={thread === undefined ? "Ledger" : "Reversals"}
        pagination={view?.pagination}
        shown={view?.thread ? rows.length - (view.rows[0]?.id === thread ? 1 : 0) : rows.length}
        onOffset={thread === undefined ? setOffset : setThreadOffset}
      />
    </section>
  );
}
