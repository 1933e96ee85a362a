/**
 * What the Hrana test server needs to know about a statement before it runs it: whether it
 * writes (and so must hold the database's write lock first), whether sqld would report its
 * affected rows (INSERT, UPDATE, DELETE) and its last insert rowid (INSERT). Read from the
 * statement's leading keywords, skipping comments, string literals and the bodies of a WITH.
 */

export interface SqlKind {
  /** Needs the write lock: a data or schema change, or BEGIN IMMEDIATE / EXCLUSIVE. */
  writes: boolean;
  /** INSERT, REPLACE, UPDATE or DELETE (with or without a WITH in front). */
  iud: boolean;
  insert: boolean;
  /** SELECT, VALUES, EXPLAIN, PRAGMA, or a transaction statement: changes no row itself. */
  readonly: boolean;
  explain: boolean;
}

const READS = new Set(["SELECT", "VALUES", "EXPLAIN", "PRAGMA"]);
const TRANSACTION = new Set(["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"]);
const IUD = new Set(["INSERT", "REPLACE", "UPDATE", "DELETE"]);

/** The words of `sql` outside comments, literals and parentheses (at most `limit` of them). */
function topLevelWords(sql: string, limit: number): string[] {
  const words: string[] = [];
  let depth = 0;
  let i = 0;
  while (i < sql.length && words.length < limit) {
    const c = sql[i] as string;
    if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      i = end < 0 ? sql.length : end + 1;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else if (c === "'" || c === '"' || c === "`" || c === "[") {
      const close = c === "[" ? "]" : c;
      let j = i + 1;
      while (j < sql.length) {
        if (sql[j] === close && sql[j + 1] === close && close !== "]") j += 2;
        else if (sql[j] === close) break;
        else j++;
      }
      i = j + 1;
    } else if (c === "(") {
      depth++;
      i++;
    } else if (c === ")") {
      depth--;
      i++;
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < sql.length && /[A-Za-z0-9_$]/.test(sql[j] as string)) j++;
      if (depth === 0) words.push(sql.slice(i, j).toUpperCase());
      i = j;
    } else i++;
  }
  return words;
}

/** Classifies one SQL statement (see the module comment). */
export function sqlKind(sql: string): SqlKind {
  const words = topLevelWords(sql, 64);
  let first = words[0] ?? "";
  if (first === "WITH") {
    first = words.find((w) => IUD.has(w) || w === "SELECT" || w === "VALUES") ?? "SELECT";
  }
  const iud = IUD.has(first);
  if (first === "BEGIN") {
    const mode = words[1] ?? "";
    const writes = mode === "IMMEDIATE" || mode === "EXCLUSIVE";
    return { writes, iud: false, insert: false, readonly: true, explain: false };
  }
  const readonly = READS.has(first) || TRANSACTION.has(first);
  return {
    writes: !readonly,
    iud,
    insert: first === "INSERT" || first === "REPLACE",
    readonly,
    explain: first === "EXPLAIN",
  };
}
