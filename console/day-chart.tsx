/**
 * A bar chart of one value per UTC day (uPlot, drawn on a canvas). The bars' heights are
 * doubles, as any drawing is; the figures shown (the legend on hover, the table beside it) are
 * the API's literals, passed in as text.
 */
import { useEffect, useRef } from "hono/jsx/dom";
import uPlot from "uplot";
import { groupDigits } from "./format.ts";

export interface DayPoint {
  /** `YYYY-MM-DD` */
  day: string;
  /** The value as the API wrote it. */
  cost: string;
  requests: number;
}

const HEIGHT = 220;
const HALF_DAY_S = 43_200;

export function DayChart({ points, label }: { points: DayPoint[]; label: string }) {
  const box = useRef<HTMLDivElement>(null);
  const key = points.map((p) => `${p.day}=${p.cost}`).join(",");
  // `key` stands for `points`: the chart is drawn again when a day's figure changes.
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const xs = points.map((p) => Date.parse(`${p.day}T00:00:00Z`) / 1000);
    const ys = points.map((p) => Number(p.cost));
    // As wide as its box (which the page's width sets), never wider: no sideways scroll at 390 px.
    const width = () => Math.max(200, el.clientWidth);
    const chart = new uPlot(
      {
        width: width(),
        height: HEIGHT,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        scales: {
          // Half a day on each side, so that the first and last bars are whole.
          x: { time: true, range: (_u, min, max) => [min - HALF_DAY_S, max + HALF_DAY_S] },
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
        },
        axes: [{}, { label: "USD", size: 70 }],
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        series: [
          { label: "Day", value: (_u, _v, _s, i) => (i === null ? "–" : (points[i]?.day ?? "–")) },
          {
            label,
            value: (_u, _v, _s, i) => groupDigits(i === null ? "–" : (points[i]?.cost ?? "–")),
            stroke: "#2563eb",
            fill: "rgba(37, 99, 235, 0.35)",
            paths: uPlot.paths.bars?.({ size: [0.7, 40] }),
            points: { show: false },
          },
        ],
      },
      [xs, ys],
      el,
    );
    const resize = () => chart.setSize({ width: width(), height: HEIGHT });
    window.addEventListener("resize", resize);
    return () => {
      window.removeEventListener("resize", resize);
      chart.destroy();
    };
  }, [key, label]);
  return <figure class="chart" ref={box} aria-label={label} />;
}
