// cicada dashboard: polls Locust's JSON API (relative URLs, so it also works
// behind a path-rewriting proxy) and renders the header, the statistics
// table, charts from the server-side history, failures, exceptions, task
// ratios, workers and logs. Plain DOM, no framework.
import "./style.css";
import { makeCharts } from "./charts.js";

const POLL_MS = 2000;
const SLOW_POLL_MS = 5000;

const $ = (id) => document.getElementById(id);
const esc = (s) =>
  String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const fmt = (v, d = 0) => (v == null ? "" : typeof v === "number" ? (d ? v.toFixed(d) : String(Math.round(v))) : String(v));

const args = window.cicadaArgs || {};
const state = {
  stats: null,
  sortKey: null,
  sortDesc: false,
  history: null,
  historyVersion: -1,
  charts: null,
  tab: "stats",
  renders: 0,
  lastRenderMs: 0,
};

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

// ---- header and controls ----------------------------------------------

function renderHeader(d) {
  $("host").textContent = d.host ?? args.host ?? "–";
  $("state").textContent = d.state;
  $("state").className = "value state-" + d.state;
  $("users").textContent = d.user_count;
  const distributed = Array.isArray(d.workers);
  $("workers-box").hidden = !distributed;
  $("workers-tab").hidden = !distributed;
  if (distributed) $("worker-count").textContent = d.worker_count ?? d.workers.length;
  const rps = d.current_rps ?? d.total_rps ?? 0;
  $("rps").textContent = rps.toFixed(2);
  $("fail-ratio").textContent = Math.round((d.fail_ratio || 0) * 100) + "%";
  // cicada's arrival-rate drops (issue 13): shown once there are any.
  $("dropped-box").hidden = !d.dropped_iterations;
  if (d.dropped_iterations) {
    $("dropped").textContent = d.dropped_iterations;
    // By name (the first request of the task each would have run), most first.
    const by = (d.dropped_iterations_by_name || []).slice().sort((a, b) => b.dropped - a.dropped);
    $("dropped-box").title = by.length
      ? "Dropped iterations by name:\n" + by.slice(0, 10).map((x) => `${x.dropped}  ${x.method} ${x.name}`).join("\n") + (by.length > 10 ? `\n… ${by.length - 10} more names` : "")
      : "";
  }
  const active = d.state === "spawning" || d.state === "running";
  $("btn-new").hidden = active;
  $("btn-edit").hidden = !active;
  $("btn-stop").hidden = !active;
}

function formError(id, msg) {
  $(id).textContent = msg || "";
}

async function postSwarm(form, errId) {
  const body = new URLSearchParams();
  for (const [k, v] of new FormData(form)) body.append(k, v);
  try {
    const r = await fetch("./swarm", { method: "POST", body });
    const d = await r.json().catch(() => ({ success: false, message: `HTTP ${r.status}` }));
    if (!d.success) {
      formError(errId, d.message);
      return false;
    }
    formError(errId, "");
    return true;
  } catch (e) {
    formError(errId, String(e));
    return false;
  }
}

function setupControls() {
  const startDlg = $("start-dialog");
  const editDlg = $("edit-dialog");
  const sf = $("start-form");
  if (args.num_users) sf.user_count.value = args.num_users;
  if (args.spawn_rate) sf.spawn_rate.value = args.spawn_rate;
  if (args.host) sf.host.value = args.host;
  if (args.run_time) sf.run_time.value = args.run_time;

  $("btn-new").onclick = () => startDlg.showModal();
  $("btn-edit").onclick = () => {
    const ef = $("edit-form");
    if (state.stats) ef.user_count.value = state.stats.user_count;
    if (!ef.spawn_rate.value) ef.spawn_rate.value = sf.spawn_rate.value || 1;
    editDlg.showModal();
  };
  for (const b of document.querySelectorAll("[data-close]")) b.onclick = () => b.closest("dialog").close();
  sf.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (await postSwarm(sf, "start-error")) {
      startDlg.close();
      state.history = null;
      state.historyVersion = -1;
      await refresh();
    }
  });
  $("edit-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (await postSwarm($("edit-form"), "edit-error")) {
      editDlg.close();
      await refresh();
    }
  });
  $("btn-stop").onclick = async () => {
    await fetch("./stop");
    await refresh();
  };
  // Reset keeps the chart history (the server keeps it too), as Locust does.
  $("btn-reset").onclick = async () => {
    await fetch("./stats/reset");
    await refresh();
  };
  if (args.is_shape) setupShape();
  if (args.show_userclass_picker) setupClassPicker();
}

// setupClassPicker shows --class-picker's choice of user classes in the
// start form: one checkbox per class (all ticked), sent as user_classes.
function setupClassPicker() {
  const list = $("class-picker-list");
  for (const name of args.available_user_classes || []) {
    const label = document.createElement("label");
    label.className = "check";
    const box = document.createElement("input");
    box.type = "checkbox";
    box.name = "user_classes";
    box.value = name;
    box.checked = true;
    label.append(box, " " + name);
    list.append(label);
  }
  $("class-picker").hidden = false;
}

// setupShape shows that a load shape drives the test, as Locust does: the
// user and spawn rate inputs are disabled with the reason (so the browser
// neither requires nor sends them), the run time too (a shape ends with its
// last stage), and a running shape test cannot be edited.
function setupShape() {
  const reason = "Disabled: a load shape (stages:) sets users and spawn rate";
  for (const form of [$("start-form"), $("edit-form")]) {
    for (const name of ["user_count", "spawn_rate", "run_time"]) {
      const input = form.elements[name];
      if (!input) continue;
      input.type = "text";
      input.value = "-";
      input.required = false;
      input.disabled = true;
      input.title = name === "run_time" ? "Disabled: a load shape ends with its last stage" : reason;
    }
    for (const note of form.querySelectorAll(".shape-note")) note.hidden = false;
  }
  $("edit-submit").disabled = true;
  $("edit-submit").title = "A running load shape cannot be edited";
}

// ---- theme ------------------------------------------------------------------

const THEME_KEY = "cicada-theme";
const darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

// effectiveTheme is the explicit choice of the toggle, else the system's.
function effectiveTheme() {
  const t = document.documentElement.dataset.theme;
  if (t === "dark" || t === "light") return t;
  return darkQuery && darkQuery.matches ? "dark" : "light";
}

function applyTheme(choice) {
  if (choice === "dark" || choice === "light") document.documentElement.dataset.theme = choice;
  else delete document.documentElement.dataset.theme;
  const eff = effectiveTheme();
  const b = $("btn-theme");
  b.title = `Theme: ${eff}${choice ? "" : " (follows the system)"}; click for ${eff === "dark" ? "light" : "dark"}`;
  b.setAttribute("aria-pressed", String(eff === "dark"));
  if (state.charts) state.charts.rebuild();
}

function setupTheme() {
  let saved = null;
  try {
    saved = localStorage.getItem(THEME_KEY);
  } catch (e) {
    // storage disabled: the toggle still works for this page
  }
  applyTheme(saved);
  $("btn-theme").onclick = () => {
    const next = effectiveTheme() === "dark" ? "light" : "dark";
    try {
      localStorage.setItem(THEME_KEY, next);
    } catch (e) {
      // not kept across reloads
    }
    applyTheme(next);
  };
  if (darkQuery) {
    darkQuery.addEventListener("change", () => {
      if (!document.documentElement.dataset.theme) applyTheme(null);
    });
  }
}

// ---- tabs ---------------------------------------------------------------

function showTab(name) {
  if (!$("tab-" + name)) name = "stats";
  state.tab = name;
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.dataset.tab === name);
  for (const s of document.querySelectorAll("main .tab")) s.classList.toggle("active", s.id === "tab-" + name);
  if (name === "charts") ensureCharts();
  if (name === "failures" && state.stats) renderFailures(state.stats);
  if (name === "phases" && state.stats) renderPhases(state.stats);
  if (name === "thresholds" && state.thresholds) renderThresholds(state.thresholds);
  if (name === "workers" && state.stats) renderWorkers(state.stats);
  if (name === "ratio") pollRatio();
  if (name === "logs") pollLogs();
}

function setupTabs() {
  for (const a of document.querySelectorAll("#tabs a")) {
    a.onclick = (ev) => {
      ev.preventDefault();
      history.replaceState(null, "", "#" + a.dataset.tab);
      showTab(a.dataset.tab);
    };
  }
  $("thresholds-summary").onclick = (ev) => {
    ev.preventDefault();
    history.replaceState(null, "", "#thresholds");
    showTab("thresholds");
  };
  showTab((location.hash || "#stats").slice(1));
}

// ---- statistics table -----------------------------------------------------

function sortRows(rows) {
  const k = state.sortKey;
  if (!k) return rows;
  const sorted = rows.slice();
  sorted.sort((a, b) => {
    const x = a[k] ?? "", y = b[k] ?? "";
    const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
    return state.sortDesc ? -c : c;
  });
  return sorted;
}

const STATS_CLASSES = ["", "name", "num", "num", "num", "num", "num", "num", "num", "num", "num", "num", "num"];

function statsCells(s) {
  return [
    s.method ?? "",
    s.name,
    String(s.num_requests),
    String(s.num_failures),
    fmt(s.median_response_time),
    fmt(s.ninetieth_response_time ?? s["response_time_percentile_0.9"]),
    fmt(s.ninety_ninth_response_time ?? s["response_time_percentile_0.99"]),
    fmt(s.avg_response_time),
    fmt(s.min_response_time),
    fmt(s.max_response_time),
    fmt(s.avg_content_length),
    fmt(s.current_rps, 1),
    fmt(s.current_fail_per_sec, 1),
  ];
}

// updateTable brings tbody to the given rows, reusing row and cell
// elements and touching only cells whose text changed: much cheaper than
// re-parsing HTML for hundreds of rows on every refresh.
function updateTable(tbody, rows, classes) {
  const trs = tbody.rows;
  for (let i = 0; i < rows.length; i++) {
    const { cells, cls } = rows[i];
    let tr = trs[i];
    if (!tr) {
      tr = tbody.insertRow();
      tr._v = [];
      for (let j = 0; j < cells.length; j++) {
        const td = tr.insertCell();
        if (classes[j]) td.className = classes[j];
      }
    }
    if (tr.className !== cls) tr.className = cls;
    const prev = tr._v;
    for (let j = 0; j < cells.length; j++) {
      if (prev[j] !== cells[j]) {
        const td = tr.cells[j];
        td.textContent = cells[j];
        if (classes[j] === "name") td.title = cells[j];
        prev[j] = cells[j];
      }
    }
  }
  while (trs.length > rows.length) tbody.deleteRow(-1);
}

// renderVisibleRows renders only the rows of state.rows that are in (or
// near) the scroll box's view, with spacers standing in for the others, so
// a refresh costs the same for 10 or 500 request names. Rows have one fixed
// height (no wrapping), measured from the first rendered row.
function renderVisibleRows() {
  const box = $("stats-box");
  const rows = state.rows || [];
  const rowH = state.rowH || 29;
  const n = rows.length;
  const start = Math.max(0, Math.floor(box.scrollTop / rowH) - 10);
  const end = Math.min(n, start + Math.ceil((box.clientHeight || 800) / rowH) + 20);
  $("stats-top").rows[0].cells[0].style.height = start * rowH + "px";
  $("stats-bottom").rows[0].cells[0].style.height = (n - end) * rowH + "px";
  $("stats-top").hidden = start === 0;
  $("stats-bottom").hidden = end === n;
  const list = [];
  for (let i = start; i < end; i++) list.push({ cells: statsCells(rows[i]), cls: "" });
  const tbody = $("stats-rows");
  updateTable(tbody, list, STATS_CLASSES);
  if (!state.rowH && tbody.rows.length) state.rowH = tbody.rows[0].getBoundingClientRect().height || 29;
}

// renderStats renders the statistics table; the failures and workers
// tables are rendered only while their tab is visible (hidden tables still
// cost parsing), and again when their tab is shown.
function renderStats(d) {
  const t0 = performance.now();
  const rows = d.stats || [];
  const total = rows.length ? rows[rows.length - 1] : null;
  state.rows = sortRows(rows.slice(0, -1));
  renderVisibleRows();
  updateTable($("stats-total"), total ? [{ cells: statsCells(total), cls: "total" }] : [], STATS_CLASSES);
  $("stats-note").textContent =
    rows.length > 500 ? "Only the first 500 request names are shown; the CSV download has all of them." : "";
  for (const th of document.querySelectorAll("#stats-table th")) {
    th.classList.toggle("sorted", th.dataset.key === state.sortKey);
    th.classList.toggle("desc", th.dataset.key === state.sortKey && state.sortDesc);
  }
  const errs = d.errors || [];
  $("failures-count").textContent = errs.length ? errs.length : "";
  if (state.tab === "failures") renderFailures(d);
  if (state.tab === "phases") renderPhases(d);
  $("phases-tab").hidden = !(d.stats || []).some((e) => e.cicada_phases);
  if (state.tab === "workers") renderWorkers(d);
  state.renders++;
  state.lastRenderMs = performance.now() - t0;
}

function renderFailures(d) {
  document.querySelector("#failures-table tbody").innerHTML = (d.errors || [])
    .map((e) => `<tr><td class="num">${e.occurrences}</td><td>${esc(e.method)}</td><td class="name">${esc(e.name)}</td><td class="pre">${esc(e.error)}</td></tr>`)
    .join("");
}

// renderPhases renders cicada's per-phase timings (cicada_phases of each
// /stats/requests entry), one row per entry and phase.
function renderPhases(d) {
  const phases = ["dns", "connect", "tls", "ttfb", "body"];
  const f = (v) => (v ?? 0).toFixed(2);
  const rows = [];
  for (const e of d.stats || []) {
    if (!e.cicada_phases) continue;
    for (const p of phases) {
      const s = e.cicada_phases[p];
      if (!s) continue;
      rows.push(
        `<tr${e.name === "Aggregated" ? ' class="total"' : ""}><td>${esc(e.method ?? "")}</td><td class="name">${esc(e.name)}</td><td>${p}</td>` +
          `<td class="num">${s.count}</td><td class="num">${f(s.avg)}</td><td class="num">${f(s.min)}</td><td class="num">${f(s.p50)}</td>` +
          `<td class="num">${f(s.p95)}</td><td class="num">${f(s.p99)}</td><td class="num">${f(s.max)}</td></tr>`,
      );
    }
  }
  document.querySelector("#phases-table tbody").innerHTML = rows.join("");
}

function renderWorkers(d) {
  if (!Array.isArray(d.workers)) return;
  document.querySelector("#workers-table tbody").innerHTML = d.workers
    .map(
      (w) =>
        `<tr><td>${esc(w.id)}</td><td>${esc(w.state)}</td><td class="num">${w.user_count}</td>` +
        `<td class="num">${(w.cpu_usage ?? 0).toFixed(1)}%</td><td class="num">${bytes(w.memory_usage)}</td>` +
        `<td class="num">${w.connections ?? ""}</td><td class="num">${w.dropped_iterations ?? ""}</td></tr>`,
    )
    .join("");
}

function bytes(n) {
  if (n == null || n < 0) return "";
  const u = ["Bytes", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function setupScrolling() {
  let pending = false;
  $("stats-box").addEventListener("scroll", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      renderVisibleRows();
    });
  });
}

function setupSorting() {
  for (const th of document.querySelectorAll("#stats-table th")) {
    th.onclick = () => {
      if (state.sortKey === th.dataset.key) state.sortDesc = !state.sortDesc;
      else {
        state.sortKey = th.dataset.key;
        state.sortDesc = th.classList.contains("num");
      }
      if (state.stats) renderStats(state.stats);
    };
  }
}

// ---- charts -----------------------------------------------------------------

function emptyHistory() {
  return {
    time: [],
    current_rps: [],
    current_fail_per_sec: [],
    "response_time_percentile_0.5": [],
    "response_time_percentile_0.95": [],
    avg_response_time: [],
    user_count: [],
    workers: [],
    conn_open: [],
    conn_established: [],
    conn_new_per_sec: [],
    conn_errors: {},
    conn_open_by_worker: {},
    conn_established_by_worker: {},
  };
}

// appendHistory appends a /stats/history answer d to h. Keyed columns
// (objects of columns) gain keys over time: a new key is padded with
// nulls for the points before it, a missing one with nulls for d's.
function appendHistory(h, d) {
  const before = h.time.length;
  const added = (d.time || []).length;
  for (const k of Object.keys(h)) {
    const col = h[k];
    if (Array.isArray(col)) {
      if (Array.isArray(d[k])) col.push(...d[k]);
      continue;
    }
    const src = d[k] || {};
    for (const key of Object.keys(src)) {
      if (!col[key]) col[key] = new Array(before).fill(null);
      col[key].push(...src[key]);
    }
    for (const key of Object.keys(col)) {
      if (!src[key]) col[key].push(...new Array(added).fill(null));
    }
  }
}

async function pollHistory() {
  const h = state.history;
  let url = "./stats/history";
  if (h && h.time.length && state.historyVersion >= 0) {
    url += `?since=${h.time[h.time.length - 1]}&version=${state.historyVersion}`;
  }
  const d = await getJSON(url);
  if (d.full || !state.history) {
    state.history = emptyHistory();
  }
  appendHistory(state.history, d);
  state.historyVersion = d.version;
  if (state.charts) state.charts.update(state.history);
}

function ensureCharts() {
  if (state.charts || !state.history) return;
  state.charts = makeCharts(
    {
      rps: $("chart-rps"),
      rt: $("chart-rt"),
      users: $("chart-users"),
      conn: $("chart-conn"),
      connrate: $("chart-connrate"),
      connerr: $("chart-connerr"),
    },
    state.history,
  );
}

// ---- thresholds ------------------------------------------------------------

// pollThresholds reads the thresholds' live states (cicada's
// /thresholds/live): the header box says how many fail, the Thresholds tab
// lists them; both stay hidden when no threshold is declared.
async function pollThresholds() {
  const d = await getJSON("./thresholds/live");
  state.thresholds = d;
  const list = d.thresholds || [];
  const any = list.length > 0;
  $("thresholds-box").hidden = !any;
  $("thresholds-tab").hidden = !any;
  if (!any) return;
  const waiting = list.filter((t) => t.state === "waiting").length;
  const sum = $("thresholds-summary");
  sum.textContent = d.failing ? `${d.failing} of ${list.length} failing` : waiting === list.length ? "waiting" : `${list.length - waiting} ok`;
  sum.className = "value " + (d.failing ? "thr-failing" : "thr-ok");
  $("thresholds-count").textContent = d.failing ? d.failing : "";
  if (state.tab === "thresholds") renderThresholds(d);
}

const THRESHOLD_CLASS = { ok: "thr-ok", FAILING: "thr-failing", waiting: "thr-waiting" };

function renderThresholds(d) {
  document.querySelector("#thresholds-table tbody").innerHTML = (d.thresholds || [])
    .map(
      (t) =>
        `<tr class="${THRESHOLD_CLASS[t.state] || ""}"><td class="name">${esc(t.threshold)}</td><td class="num">${esc(t.measured_text)}</td>` +
        `<td class="state">${esc(t.state)}</td><td>${esc(t.note)}</td></tr>`,
    )
    .join("");
}

// ---- exceptions, ratios, logs ----------------------------------------------

async function pollExceptions() {
  const d = await getJSON("./exceptions");
  const ex = d.exceptions || [];
  $("exceptions-count").textContent = ex.length ? ex.length : "";
  document.querySelector("#exceptions-table tbody").innerHTML = ex
    .map((e) => `<tr><td class="num">${e.count}</td><td>${esc(e.msg)}</td><td class="pre">${esc(e.traceback)}</td><td>${esc(e.nodes)}</td></tr>`)
    .join("");
}

function ratioTree(obj) {
  const items = Object.entries(obj || {})
    .map(([name, v]) => `<li>${(v.ratio * 100).toFixed(1)}% ${esc(name)}${v.tasks ? ratioTree(v.tasks) : ""}</li>`)
    .join("");
  return items ? `<ul>${items}</ul>` : "";
}

async function pollRatio() {
  const d = await getJSON("./tasks");
  $("ratio-per-class").innerHTML = ratioTree(d.per_class) || "<p>No user classes.</p>";
  $("ratio-total").innerHTML = ratioTree(d.total) || "<p>No user classes.</p>";
}

async function pollLogs() {
  const d = await getJSON("./logs");
  $("logs-master").textContent = (d.master || []).join("\n");
  $("logs-workers").innerHTML = Object.entries(d.workers || {})
    .map(([id, lines]) => `<h3>${esc(id)}</h3><pre class="logs">${esc(lines.join("\n"))}</pre>`)
    .join("");
}

// ---- polling ------------------------------------------------------------------

async function refresh() {
  const d = await getJSON("./stats/requests");
  state.stats = d;
  renderHeader(d);
  renderStats(d);
  await pollHistory();
  await pollThresholds();
  if (state.tab === "charts") ensureCharts();
  $("last-update").textContent = "updated " + new Date().toLocaleTimeString();
}

function loop(fn, ms) {
  const tick = async () => {
    try {
      await fn();
    } catch (e) {
      console.warn(e);
    }
    setTimeout(tick, ms);
  };
  tick();
}

function main() {
  $("version").textContent = "cicada " + (args.version || "");
  if (args.locustfile) document.title = "cicada for " + args.locustfile;
  setupTheme();
  setupControls();
  setupSorting();
  setupScrolling();
  setupTabs();
  loop(refresh, POLL_MS);
  loop(pollExceptions, SLOW_POLL_MS);
  loop(async () => {
    if (state.tab === "ratio") await pollRatio();
    if (state.tab === "logs") await pollLogs();
  }, SLOW_POLL_MS);
  window.addEventListener("resize", () => state.charts && state.charts.resize());
  if (args.state === "ready" && !args.autostart) $("start-dialog").showModal();
}

// window.cicada is the hook the end-to-end test uses to measure rendering.
window.cicada = { state, refresh, renderStats, renderVisibleRows, showTab, effectiveTheme, pollThresholds };
main();
