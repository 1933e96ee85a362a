/**
 * The console's tables (contract section 16: every page usable from 390 px wide). A table is
 * shown as a table while its columns fit its box; when they do not (a phone, or many wide
 * columns), each row becomes a stacked block of `label  value` lines, so that every amount,
 * date, status and button stays whole on the screen and nothing scrolls sideways.
 *
 * Whether it fits is measured, not guessed from the window's width: the columns' width depends
 * on the figures in them (`0` or `9,000,000,000.000001`). It is measured again when the box's
 * width changes and after every render. The stacked labels are CSS (`content: attr(data-label)
 * / ""`), with an empty alternative text, so that a cell's accessible name stays its value.
 */
import { type Child, useLayoutEffect, useRef } from "hono/jsx/dom";

/** One column: its header and how a row fills its cell. */
export interface Column<T> {
  /** The header, and each cell's label in stacked rows. */
  label: string;
  /** The header is for screen readers only (a column of buttons). */
  hideLabel?: boolean;
  /** Aligned to the end (numbers). */
  end?: boolean;
  cell: (row: T) => Child;
}

/**
 * Lays out the table in `box` as a table when it fits, else as stacked rows; sets
 * `data-layout` to `table` or `stacked`.
 */
function fitTable(box: HTMLElement): void {
  const table = box.querySelector("table");
  // Not laid out (inside a closed `details`): measured once it shows.
  if (!table || box.clientWidth === 0) return;
  box.dataset.layout = "table";
  // A table is never narrower than its columns' least width: wider than its box, it does not fit.
  const fits = table.getBoundingClientRect().width <= box.getBoundingClientRect().width + 0.5;
  box.dataset.layout = fits ? "table" : "stacked";
}

/**
 * A table of `rows` in `columns`, named by `label` (or by the element `labelledBy` names),
 * each row keyed by `rowKey` and classed by `rowClass`.
 */
export function DataTable<T>({
  columns,
  rows,
  rowKey,
  rowClass,
  label,
  labelledBy,
}: {
  columns: Column<T>[];
  rows: readonly T[];
  rowKey: (row: T) => string;
  rowClass?: (row: T) => string | undefined;
  label?: string;
  labelledBy?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  // Measured again after every render: new rows may hold wider figures.
  useLayoutEffect(() => {
    if (box.current) fitTable(box.current);
  });
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    let width = -1;
    const observer = new ResizeObserver(() => {
      // Only a change of width matters; stacking the rows changes the height.
      if (el.clientWidth === width) return;
      width = el.clientWidth;
      fitTable(el);
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return (
    <div class="table-box" ref={box}>
      <table aria-label={label} aria-labelledby={labelledBy}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.label} scope="col" class={c.end ? "end" : undefined}>
                {c.hideLabel ? <span class="visually-hidden">{c.label}</span> : c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)} class={rowClass?.(row)}>
              {columns.map((c) => (
                <td
                  key={c.label}
                  class={c.end ? "end" : undefined}
                  data-label={c.hideLabel ? "" : c.label}
                >
                  <div class="cell">{c.cell(row)}</div>
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
