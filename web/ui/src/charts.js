// Chart helpers shared by the dashboard and the HTML report: uPlot charts
// (requests/s and failures/s, response-time percentiles, users, and the
// workers' connections) over the columnar history that GET /stats/history
// returns.
//
// Conventions: time ticks fall on round seconds or minutes; rate, count
// and user axes start at 0; the legend shows the value under the cursor,
// or the last value when the cursor is elsewhere (never "–" for a series
// with data). Colours of axes and grid come from the page's CSS variables,
// so a theme change only needs the charts to be re-created.
import uPlot from "uplot";

const SYNC_KEY = "cicada";

// Tick increments of the time axis, in seconds: no sub-second ticks.
const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

const pad = (n) => String(n).padStart(2, "0");

// timeTicks formats tick values (unix seconds) as local HH:MM:SS, or HH:MM
// when the ticks are whole minutes apart.
export function timeTicks(u, splits, axisIdx, space, incr) {
  return splits.map((v) => {
    const d = new Date(v * 1000);
    const hm = pad(d.getHours()) + ":" + pad(d.getMinutes());
    return incr >= 60 ? hm : hm + ":" + pad(d.getSeconds());
  });
}

// fromZero is a y range that starts at 0 and leaves headroom above max.
export function fromZero(u, min, max) {
  if (max == null || !(max > 0)) return [0, 1];
  return [0, max * 1.1];
}

// timeLabel formats unix seconds as local YYYY-MM-DD HH:MM:SS.
const timeLabel = (v) => {
  const d = new Date(v * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
};
const num2 = (v) => v.toFixed(2);
const num0 = (v) => String(Math.round(v));

// lastValue returns the last non-null value of a column, or null.
export function lastValue(col) {
  for (let i = (col || []).length - 1; i >= 0; i--) if (col[i] != null) return col[i];
  return null;
}

// legendValue shows the value at the cursor, or the series' last value
// when the cursor is off the chart (idx null).
function legendValue(format) {
  return (u, v, si, idx) => {
    if (idx == null) v = lastValue(u.data[si]);
    return v == null ? "–" : format(v);
  };
}

// chartSpecs lists the charts: a title, a y label and the history columns.
// A spec with conn: true is shown only when the history has connection
// data; keyed names a column object whose keys become series.
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
  {
    id: "conn",
    conn: true,
    title: "Connections (hover for each worker)",
    y: "connections",
    series: [
      { label: "Open", col: "conn_open", stroke: "#2ca02c", value: num0 },
      { label: "Established", col: "conn_established", stroke: "#8c564b", value: num0, dash: [4, 4] },
    ],
    perWorker: true,
  },
  {
    id: "connrate",
    conn: true,
    title: "New Connections per Second",
    y: "per second",
    series: [{ label: "New connections/s", col: "conn_new_per_sec", stroke: "#e377c2", value: num2 }],
  },
  {
    id: "connerr",
    conn: true,
    title: "Connection Errors per Second (by kind and side)",
    y: "per second",
    keyed: "conn_errors",
    series: [],
  },
];

const PALETTE = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#1f77b4", "#2ca02c"];

// seriesOf returns a spec's series for history h: its fixed series, or
// one per key of its keyed column (generator-side kinds dashed).
export function seriesOf(spec, h) {
  if (!spec.keyed) return spec.series;
  const keys = Object.keys(h[spec.keyed] || {}).sort();
  if (!keys.length) return [{ label: "No connection errors", zero: true, stroke: "#7f7f7f", value: num2 }];
  return keys.map((k, i) => ({ label: k, key: k, stroke: PALETTE[i % PALETTE.length], value: num2, dash: k.endsWith("(generator)") ? [6, 3] : undefined }));
}

// toData turns columnar history into uPlot's aligned data for one spec.
export function toData(spec, h, series = seriesOf(spec, h)) {
  const t = h.time || [];
  const cols = spec.keyed ? h[spec.keyed] || {} : h;
  return [t, ...series.map((s) => (s.zero ? t.map(() => 0) : cols[s.key ?? s.col] || []))];
}

// hasConn reports whether the history holds any connection data.
export function hasConn(h) {
  return (h.conn_open || []).some((v) => v != null);
}

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

function axisOpts() {
  const stroke = cssVar("--muted", "#667085");
  const grid = { stroke: cssVar("--grid", "rgba(0,0,0,0.08)"), width: 1 };
  const ticks = { stroke: grid.stroke, width: 1 };
  return { stroke, grid, ticks };
}

// workerTip renders the per-worker values at idx into tip.
function workerTip(tip, h, idx) {
  const open = h.conn_open_by_worker || {};
  const est = h.conn_established_by_worker || {};
  const rows = Object.keys(open)
    .sort()
    .filter((id) => open[id][idx] != null)
    .map((id) => [id, open[id][idx], (est[id] || [])[idx]]);
  if (idx == null || !rows.length) {
    tip.hidden = true;
    return;
  }
  tip.hidden = false;
  tip.replaceChildren();
  const head = document.createElement("div");
  head.className = "tip-head";
  head.textContent = "open / established per worker";
  tip.append(head);
  for (const [id, o, e] of rows) {
    const row = document.createElement("div");
    row.textContent = `${id}: ${o} / ${e ?? "–"}`;
    tip.append(row);
  }
}

// plotWidth is the width inside el's padding, so that the plot and its
// legend stay inside the card.
function plotWidth(el) {
  const cs = getComputedStyle(el);
  const w = (el.clientWidth || 800) - parseFloat(cs.paddingLeft || "0") - parseFloat(cs.paddingRight || "0");
  return Math.max(Math.floor(w), 300);
}

function makePlot(spec, el, h) {
  const width = plotWidth(el);
  const series = seriesOf(spec, h);
  const ax = axisOpts();
  const opts = {
    title: spec.title,
    width,
    height: 260,
    cursor: { sync: { key: SYNC_KEY } },
    scales: { x: { time: true }, y: { range: fromZero } },
    axes: [
      { ...ax, incrs: TIME_INCRS, values: timeTicks, space: 70 },
      { ...ax, label: spec.y, size: 60 },
    ],
    series: [
      { value: legendValue(timeLabel) },
      ...series.map((s) => ({
        label: s.label,
        stroke: s.stroke,
        width: 2,
        dash: s.dash,
        value: legendValue(s.value),
        spanGaps: false,
        points: { show: false },
      })),
    ],
    legend: { live: true },
    hooks: {},
  };
  let tip = null;
  if (spec.perWorker) {
    tip = document.createElement("div");
    tip.className = "worker-tip";
    tip.hidden = true;
    opts.hooks.setCursor = [(u) => workerTip(tip, u._cicadaHistory || {}, u.cursor.idx)];
  }
  el.replaceChildren();
  const plot = new uPlot(opts, toData(spec, h, series), el);
  plot._cicadaHistory = h;
  if (tip) el.append(tip);
  return { spec, plot, el, keys: series.map((s) => s.label).join("\n") };
}

// makeCharts creates one uPlot per spec inside the elements
// containers[spec.id] and returns {update(history), resize(), destroy()}.
// Connection charts are hidden while the history has no connection data;
// a chart whose series change (a new error kind) is re-created.
export function makeCharts(containers, history) {
  const plots = new Map();
  let last = history;
  const sync = (h) => {
    last = h;
    const conn = hasConn(h);
    for (const spec of chartSpecs) {
      const el = containers[spec.id];
      if (!el) continue;
      const show = !spec.conn || conn;
      el.hidden = !show;
      let p = plots.get(spec.id);
      if (!show) {
        if (p) {
          p.plot.destroy();
          plots.delete(spec.id);
        }
        continue;
      }
      const keys = seriesOf(spec, h)
        .map((s) => s.label)
        .join("\n");
      if (p && p.keys !== keys) {
        p.plot.destroy();
        p = null;
      }
      if (!p) {
        plots.set(spec.id, makePlot(spec, el, h));
      } else {
        p.plot._cicadaHistory = h;
        p.plot.setData(toData(spec, h));
      }
    }
  };
  sync(history);
  return {
    plots,
    update: sync,
    resize() {
      for (const p of plots.values()) {
        p.plot.setSize({ width: plotWidth(p.el), height: 260 });
      }
    },
    // rebuild re-creates every chart (after a theme change).
    rebuild() {
      for (const p of plots.values()) p.plot.destroy();
      plots.clear();
      sync(last);
    },
  };
}
