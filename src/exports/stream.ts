/**
 * The streamed answer of an export (docs/api.md#exports, docs/design.md#exports): a header,
 * then one chunk per keyset page, each page read only when the client has taken the previous
 * one (the stream is pulled, with no queue of its own), so memory stays bounded by a page or two
 * however many rows are exported. A client that disconnects cancels the stream: no further page
 * is read. Each export ends with one log line and its metrics (pages, rows, outcome).
 */
import type { Context } from "hono";
import type { AppDeps } from "../http/context.ts";
import type { ExportName, ExportOutcome } from "../metrics.ts";

/** The exports' formats. */
export type ExportFormat = "csv" | "ndjson";

/** Rows read by an export at a time: one keyset page. */
export const EXPORT_PAGE_ROWS = 1000;

/** What an export streams. */
export interface ExportSource<R> {
  name: ExportName;
  format: ExportFormat;
  /** The file name offered to the browser (`transactions-….csv`). */
  filename: string;
  /** What comes before the first row (the CSV header row; empty for NDJSON). */
  header: string;
  /** The keyset pages, oldest first (see `keysetPages`). */
  pages: AsyncGenerator<R[], void>;
  /** A page's rows in the export's format, each line ended. */
  encode: (rows: R[]) => Promise<string>;
}

const CONTENT_TYPE: Record<ExportFormat, string> = {
  csv: "text/csv; charset=utf-8",
  ndjson: "application/x-ndjson",
};

/**
 * Answers 200 with `source` streamed. The first page is read before the answer starts, so a
 * database that cannot be read is still the API's 503 rather than a cut-short 200.
 * @throws whatever reading the first page throws
 */
export async function exportResponse<R>(
  c: Context,
  deps: Pick<AppDeps, "logger" | "metrics">,
  source: ExportSource<R>,
): Promise<Response> {
  const startedMs = performance.now();
  const encoder = new TextEncoder();
  const { name, pages } = source;
  const counts = { pages: 0, rows: 0 };
  let ended = false;
  const end = (outcome: ExportOutcome, err?: unknown) => {
    if (ended) return;
    ended = true;
    deps.metrics.observeExportEnd(name, outcome);
    const entry = {
      requestId: c.get("requestId"),
      export: name,
      format: source.format,
      outcome,
      pages: counts.pages,
      rows: counts.rows,
      durationMs: Math.round(performance.now() - startedMs),
      ...(err === undefined ? {} : { err: err instanceof Error ? err.message : String(err) }),
    };
    if (outcome === "failed") deps.logger.error(entry, "export");
    else deps.logger.info(entry, "export");
  };
  /** The next page as bytes, or null after the last one. */
  const next = async (): Promise<Uint8Array | null> => {
    const page = await pages.next();
    if (page.done) return null;
    counts.pages++;
    counts.rows += page.value.length;
    deps.metrics.observeExportPage(name, page.value.length);
    return encoder.encode(await source.encode(page.value));
  };
  let first: Uint8Array | null;
  try {
    first = await next();
  } catch (err) {
    end("failed", err);
    throw err;
  }
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        controller.enqueue(encoder.encode(source.header));
        if (first) controller.enqueue(first);
        else {
          controller.close();
          end("completed");
        }
      },
      async pull(controller) {
        try {
          const chunk = await next();
          if (ended) return; // cancelled while the page was being read
          if (chunk) controller.enqueue(chunk);
          else {
            controller.close();
            end("completed");
          }
        } catch (err) {
          if (ended) return;
          end("failed", err);
          // The client sees the answer cut short (no final chunk), never a partial file as whole.
          controller.error(err);
        }
      },
      cancel() {
        end("cancelled");
        // Ends the walk once a page being read has come back; no page is read after it.
        pages.return().catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, {
    status: 200,
    headers: {
      "Content-Type": CONTENT_TYPE[source.format],
      "Content-Disposition": `attachment; filename="${source.filename}"`,
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
    },
  });
}

/**
 * The file name of an export: `transactions-acc_…-20261121T082245Z.csv` for one account's,
 * `usage-all-20261121T082245Z.ndjson` for the project's; only characters safe in a header.
 * @param accountId the account exported (an internal id), or undefined for the whole project
 * @param nowMs the export's start, epoch ms
 */
export function exportFilename(
  name: ExportName,
  accountId: string | undefined,
  format: ExportFormat,
  nowMs: number,
): string {
  const stamp = new Date(nowMs).toISOString().replace(/[-:]/g, "").replace(/\.\d+/, "");
  const who = (accountId ?? "all").replace(/[^\w-]/g, "_");
  return `${name}-${who}-${stamp}.${format}`;
}
