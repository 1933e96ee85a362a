/**
 * CSV of the exports (docs/api.md#exports): RFC 4180 with CRLF line ends, a field quoted when it
 * holds a comma, a quote, CR or LF (its quotes doubled), and a text field that begins with `=`,
 * `+`, `-`, `@`, a tab or a CR written with a leading `'`, so that a spreadsheet opening the file
 * never reads it as a formula (OWASP's "CSV injection"). Nothing else is changed.
 */
import { ExactDecimal } from "../money.ts";

/**
 * One field of a row: text (guarded against formula injection, then quoted as needed), an
 * exact decimal or a whole number (written as its literal), or null (an empty field).
 */
export type CsvCell = string | ExactDecimal | number | null;

/** The characters that make a spreadsheet read a text field as a formula, at its start. */
const FORMULA_START = new Set(["=", "+", "-", "@", "\t", "\r"]);

/** A field holding one of these must be quoted (RFC 4180, 2.6). */
const NEEDS_QUOTES = /[",\r\n]/;

/** Text as a CSV field: a leading `'` before a formula's first character, quoted as needed. */
export function csvText(text: string): string {
  const first = text.charAt(0);
  const safe = FORMULA_START.has(first) ? `'${text}` : text;
  return NEEDS_QUOTES.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/**
 * A field as CSV: text through `csvText`; an `ExactDecimal` as its exact literal
 * (`8600000000.000001`); a number, which must be a safe integer (a token count), as its digits.
 * @throws Error for a number that is not a safe integer (amounts travel as `ExactDecimal`)
 */
export function csvCell(cell: CsvCell): string {
  if (cell === null) return "";
  if (typeof cell === "string") return csvText(cell);
  if (cell instanceof ExactDecimal) return cell.literal;
  if (!Number.isSafeInteger(cell)) throw new Error(`CSV number ${cell} is not a safe integer`);
  return String(cell);
}

/** One CSV record with its CRLF line end. */
export function csvLine(cells: readonly CsvCell[]): string {
  let line = "";
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) line += ",";
    line += csvCell(cells[i] ?? null);
  }
  return `${line}\r\n`;
}
