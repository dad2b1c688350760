// Chart helpers shared by the dashboard and the HTML report: three uPlot
// charts (requests/s and failures/s, response-time percentiles, users) over
// the columnar history that GET /stats/history returns.
import uPlot from "uplot";

const SYNC_KEY = "cicada";

function baseOpts(title, width, series, yLabel) {
  return {
    title,
    width,
    height: 260,
    cursor: { sync: { key: SYNC_KEY } },
    scales: { x: { time: true } },
    axes: [{}, { label: yLabel, size: 60 }],
    series: [{}, ...series],
    legend: { live: true },
  };
}

const num2 = (u, v) => (v == null ? "–" : v.toFixed(2));
const num0 = (u, v) => (v == null ? "–" : String(Math.round(v)));

// chartSpecs lists the charts: a title, a y label and the history columns.
export const chartSpecs = [
  {
    id: "rps",
    title: "Total Requests per Second",
    y: "per second",
    series: [
      { label: "RPS", col: "current_rps", stroke: "#00a86b", value: num2 },
      { label: "Failures/s", col: "current_fail_per_sec", stroke: "#d62728", value: num2 },
    ],
  },
  {
    id: "rt",
    title: "Response Times (ms)",
    y: "ms",
    series: [
      { label: "Median (50%)", col: "response_time_percentile_0.5", stroke: "#1f77b4", value: num0 },
      { label: "95th percentile", col: "response_time_percentile_0.95", stroke: "#ff7f0e", value: num0 },
      { label: "Average", col: "avg_response_time", stroke: "#9467bd", value: num0, dash: [4, 4] },
    ],
  },
  {
    id: "users",
    title: "Number of Users",
    y: "users",
    series: [{ label: "Users", col: "user_count", stroke: "#17becf", value: num0 }],
  },
];

// toData turns columnar history into uPlot's aligned data for one spec.
export function toData(spec, h) {
  const t = h.time || [];
  return [t, ...spec.series.map((s) => h[s.col] || [])];
}

// makeCharts creates one uPlot per spec inside the elements
// containers[spec.id] and returns {update(history), resize()}.
export function makeCharts(containers, history) {
  const plots = [];
  for (const spec of chartSpecs) {
    const el = containers[spec.id];
    if (!el) continue;
    const width = Math.max(el.clientWidth || 800, 300);
    const series = spec.series.map((s) => ({
      label: s.label,
      stroke: s.stroke,
      width: 2,
      dash: s.dash,
      value: s.value,
      spanGaps: false,
      points: { show: false },
    }));
    const plot = new uPlot(baseOpts(spec.title, width, series, spec.y), toData(spec, history), el);
    plots.push({ spec, plot, el });
  }
  return {
    plots,
    update(h) {
      for (const p of plots) p.plot.setData(toData(p.spec, h));
    },
    resize() {
      for (const p of plots) {
        const w = Math.max(p.el.clientWidth || 800, 300);
        p.plot.setSize({ width: w, height: 260 });
      }
    },
  };
}
