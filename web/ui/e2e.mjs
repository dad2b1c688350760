// End-to-end test of the dashboard in a real Chromium (Debian's, driven by
// playwright-core). Started by `go test ./web -run TestBrowser`, which serves
// the dashboard with a fake runner that simulates a running test.
//
//   node e2e.mjs <base-url> <artifacts-dir> [flow|perf]
//
// flow: start a test from the form, see table rows and charts update, sort,
//       edit the user count, download the stats CSV, reload and see the
//       history again, stop. Screenshots go to <artifacts-dir>.
// perf: measure the statistics table's render time per refresh.
// layout: at 800 and 1280 px the Name column keeps a readable width (and
//       stays in view when the table scrolls sideways); dark theme by
//       prefers-color-scheme and by the toggle, kept across reloads.
// shape: a load-shape run: inputs disabled with the reason, start without
//       numbers, Edit disabled.
// phases: the Phases tab lists cicada's per-phase timings.
// picker: --class-picker's checkboxes in the start form, sent as user_classes.
// thresholds: the header box and the Thresholds tab show the live states
//       (escaped names), and follow them when they change (after Stop).
// The last line printed is "E2E_RESULT <json>".
import { chromium } from "playwright-core";
import fs from "node:fs";
import path from "node:path";

const [base, artifacts = "artifacts", mode = "flow"] = process.argv.slice(2);
if (!base) {
  console.error("usage: node e2e.mjs <base-url> <artifacts-dir> [flow|perf]");
  process.exit(2);
}
fs.mkdirSync(artifacts, { recursive: true });

const T = 30000; // generous per-step timeout for a loaded 2-core machine
const result = { mode };
const problems = [];

// watch records a page's script errors, console errors and Content
// Security Policy violations (the server sends a CSP; the pages must work
// under it).
async function watch(page, name) {
  page.on("pageerror", (e) => problems.push(name + " pageerror: " + e.message));
  page.on("console", (m) => {
    // The report has no favicon link, so Chromium asks for /favicon.ico.
    if (m.type() === "error" && !(m.location().url || "").endsWith("/favicon.ico")) {
      problems.push(name + " console: " + m.text());
    }
  });
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI);
    });
  });
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
  ],
});

async function shot(page, name) {
  await page.screenshot({ path: path.join(artifacts, name), fullPage: false });
}

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

async function flow(page) {
  await page.goto(base + "/", { waitUntil: "load", timeout: T });
  // In state ready the start form opens by itself.
  await page.waitForSelector("#start-dialog[open]", { timeout: T });
  await shot(page, "01-start-form.png");
  await page.fill('#start-form input[name="user_count"]', "10");
  await page.fill('#start-form input[name="spawn_rate"]', "5");
  await page.fill('#start-form input[name="host"]', "http://127.0.0.1:26080");
  await page.click("#start-submit");
  await page.waitForSelector("#start-dialog", { state: "hidden", timeout: T });

  // Table rows appear and numbers change.
  await page.waitForFunction(() => document.querySelectorAll("#stats-rows tr").length >= 3, null, { timeout: T });
  const totalReqs = () =>
    page.$eval("#stats-total tr.total td:nth-child(3)", (td) => Number(td.textContent));
  await page.waitForFunction(
    () => Number(document.querySelector("#stats-total tr.total td:nth-child(3)")?.textContent || 0) > 0,
    null,
    { timeout: T },
  );
  const n1 = await totalReqs();
  // cicada's boxes stay hidden without their data (no drops, no thresholds).
  for (const id of ["#dropped-box", "#thresholds-box"]) check(!(await page.isVisible(id)), id + " shown without data");
  await page.waitForFunction(
    (n) => Number(document.querySelector("#stats-total tr.total td:nth-child(3)").textContent) > n,
    n1,
    { timeout: T },
  );
  result.rows = await page.$$eval("#stats-rows tr", (rs) => rs.length);
  result.state = await page.textContent("#state");
  check(["spawning", "running"].includes(result.state), "state after start: " + result.state);
  await shot(page, "02-running.png");

  // Sorting: by # Requests (descending first), Aggregated stays last.
  await page.click('#stats-table th[data-key="num_requests"]');
  const sorted = await page.$$eval("#stats-rows tr td:nth-child(3)", (tds) =>
    tds.map((td) => Number(td.textContent)),
  );
  check(sorted.every((v, i) => i === 0 || sorted[i - 1] >= v), "not sorted descending: " + sorted);
  check((await page.$$("#stats-total tr.total")).length === 1, "Aggregated row missing");

  // Charts fill from the server history: three of requests and users,
  // three of connections (the fake workers report connection counters).
  await page.click('#tabs a[data-tab="charts"]');
  await page.waitForFunction(() => document.querySelectorAll("#tab-charts .uplot").length === 6, null, { timeout: T });
  await page.waitForFunction(() => (window.cicada.state.history?.time.length || 0) >= 3, null, { timeout: T });
  const pointsBefore = await page.evaluate(() => window.cicada.state.history.time.length);
  await page.waitForFunction((n) => window.cicada.state.history.time.length > n, pointsBefore, { timeout: T });
  result.chartPoints = await page.evaluate(() => window.cicada.state.history.time.length);
  await checkCharts(page);
  await shot(page, "03-charts.png");

  // Edit the running test.
  await page.click("#btn-edit");
  await page.waitForSelector("#edit-dialog[open]", { timeout: T });
  await page.fill('#edit-form input[name="user_count"]', "20");
  await page.fill('#edit-form input[name="spawn_rate"]', "20");
  await page.click("#edit-submit");
  await page.waitForFunction(() => document.querySelector("#users").textContent === "20", null, { timeout: T });
  result.usersAfterEdit = Number(await page.textContent("#users"));

  // Download the stats CSV.
  await page.click('#tabs a[data-tab="download"]');
  const [download] = await Promise.all([page.waitForEvent("download", { timeout: T }), page.click("#dl-requests")]);
  const csvPath = path.join(artifacts, "requests.csv");
  await download.saveAs(csvPath);
  const csv = fs.readFileSync(csvPath, "utf8");
  check(csv.startsWith("Type,Name,Request Count,Failure Count"), "bad CSV: " + csv.slice(0, 80));
  check(csv.includes(",Aggregated,"), "CSV without Aggregated row");
  result.csvName = download.suggestedFilename();
  result.csvLines = csv.trim().split("\r\n").length;

  // Error kinds appeared during the incremental polls: columns aligned.
  result.errorKindsBeforeReload = await checkAligned(page);

  // Reload: the chart history comes back from the server.
  const before = await page.evaluate(() => window.cicada.state.history.time.length);
  await page.goto(base + "/#charts", { waitUntil: "load", timeout: T });
  await page.reload({ waitUntil: "load", timeout: T });
  await page.waitForFunction((n) => (window.cicada.state.history?.time.length || 0) >= n, before, { timeout: T });
  await page.waitForFunction(() => document.querySelectorAll("#tab-charts .uplot").length === 6, null, { timeout: T });
  result.pointsAfterReload = await page.evaluate(() => window.cicada.state.history.time.length);
  result.pointsBeforeReload = before;
  await shot(page, "04-after-reload.png");

  // Other tabs render.
  await page.click('#tabs a[data-tab="failures"]');
  await page.waitForFunction(() => document.querySelectorAll("#failures-table tbody tr").length >= 1, null, { timeout: T });
  await shot(page, "05-failures.png");
  await page.click('#tabs a[data-tab="workers"]');
  await page.waitForFunction(() => document.querySelectorAll("#workers-table tbody tr").length >= 1, null, { timeout: T });
  await shot(page, "06-workers.png");
  await page.click('#tabs a[data-tab="ratio"]');
  await page.waitForFunction(() => document.querySelector("#ratio-total li") !== null, null, { timeout: T });

  // Stop, then (after the report) reset: GET routes that change state,
  // which the server refuses from other sites and must accept from the
  // dashboard.
  await page.click('#tabs a[data-tab="stats"]');
  const [stop] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/stop"), { timeout: T }),
    page.click("#btn-stop"),
  ]);
  check(stop.status() === 200, "stop from the dashboard answered " + stop.status());
  await page.waitForFunction(() => document.querySelector("#state").textContent === "stopped", null, { timeout: T });
  check(await page.isVisible("#btn-new"), "New test button hidden after stop");
  result.finalState = await page.textContent("#state");
  await shot(page, "07-stopped.png");

  // The report opens and draws its charts.
  const report = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await watch(report, "report");
  await report.goto(base + "/stats/report", { waitUntil: "load", timeout: T });
  await report.waitForFunction(() => document.querySelectorAll(".uplot").length === 6, null, { timeout: T });
  // Legends: laid out by uPlot, not by the report's table CSS, inside
  // their card, and showing last values rather than "–".
  const legends = await report.evaluate(() =>
    [...document.querySelectorAll(".chart")].filter((c) => !c.hidden).map((c) => {
      const lg = c.querySelector(".u-legend");
      const cr = c.getBoundingClientRect();
      const lr = lg.getBoundingClientRect();
      const values = [...lg.querySelectorAll(".u-series:not(:first-child) .u-value")].map((v) => v.textContent);
      return { id: c.id, inside: lr.left >= cr.left - 1 && lr.right <= cr.right + 1, width: getComputedStyle(lg).width, values };
    }),
  );
  for (const l of legends) {
    check(l.inside, "report legend overflows its card: " + JSON.stringify(l));
    check(l.values.length > 0 && l.values.every((v) => v !== "–" && v !== ""), "report legend without values: " + JSON.stringify(l));
  }
  result.reportLegends = legends.length;
  await report.screenshot({ path: path.join(artifacts, "08-report.png"), fullPage: true });
  await report.close();

  // Reset from the dashboard keeps the chart history (Locust keeps its
  // charts), and the time axis stays on the test's time span.
  await page.click('#tabs a[data-tab="charts"]');
  const pointsBeforeReset = await page.evaluate(() => window.cicada.state.history.time.length);
  const [reset] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith("/stats/reset"), { timeout: T }),
    page.click("#btn-reset"),
  ]);
  check(reset.status() === 200, "reset from the dashboard answered " + reset.status());
  await page.waitForFunction(() => Number(document.querySelector("#stats-total tr.total td:nth-child(3)")?.textContent || 0) === 0, null, { timeout: T });
  await page.reload({ waitUntil: "load", timeout: T });
  await page.waitForFunction((n) => (window.cicada.state.history?.time.length || 0) >= n, pointsBeforeReset, { timeout: T });
  await page.waitForFunction(() => document.querySelectorAll("#tab-charts .uplot").length === 6, null, { timeout: T });
  result.pointsBeforeReset = pointsBeforeReset;
  result.pointsAfterReset = await page.evaluate(() => window.cicada.state.history.time.length);
  await checkCharts(page);
  await shot(page, "09-after-reset.png");
}

// checkCharts checks the charts of the dashboard's Charts tab: time ticks
// on whole seconds (no ":45.500"), within this year (no 2027-2029 axis of
// an empty chart), a users axis from 0, legends with values, and the
// per-worker hover of the connections chart.
async function checkCharts(page) {
  const info = await page.evaluate(() => {
    // Axes are drawn on a canvas: read uPlot's computed tick labels.
    const out = [];
    for (const [id, p] of window.cicada.state.charts.plots) {
      const c = document.getElementById("chart-" + id);
      if (c.hidden) continue;
      const ticks = (p.plot.axes[0]._values || []).map(String);
      const yTicks = (p.plot.axes[1]._values || []).map(String);
      const values = [...c.querySelectorAll(".u-legend .u-series:not(:first-child) .u-value")].map((v) => v.textContent);
      out.push({ id: c.id, ticks, yTicks, values });
    }
    return out;
  });
  for (const c of info) {
    check(c.ticks.length > 0, "no time ticks: " + JSON.stringify(c));
    check(c.ticks.every((t) => /^\d\d:\d\d(:\d\d)?$/.test(t)), "time ticks not on whole seconds: " + JSON.stringify(c));
    check(c.values.length > 0 && c.values.every((v) => v !== "–"), "legend without values: " + JSON.stringify(c));
  }
  await checkAligned(page);
  const users = info.find((c) => c.id === "chart-users");
  check(users && users.yTicks[0] === "0", "users axis does not start at 0: " + JSON.stringify(users));
  const years = await page.evaluate(() => {
    const p = window.cicada.state.charts.plots.get("users").plot;
    return [new Date(p.scales.x.min * 1000).getFullYear(), new Date(p.scales.x.max * 1000).getFullYear()];
  });
  const now = new Date().getFullYear();
  check(years[0] === now && years[1] === now, "time axis outside this year: " + years);
  // Hover the middle of the connections chart: the per-worker tip shows.
  const over = await page.$("#chart-conn .u-over");
  await over.scrollIntoViewIfNeeded();
  const box = await over.boundingBox();
  await page.mouse.move(box.x + box.width * 0.9, box.y + box.height / 2);
  await page.waitForFunction(() => {
    const tip = document.querySelector("#chart-conn .worker-tip");
    return tip && !tip.hidden && tip.textContent.includes("fakehost_");
  }, null, { timeout: T });
  await shot(page, "charts-hover.png");
  await page.mouse.move(1, 1);
  result.charts = info.length;
}

async function perf(page) {
  await page.goto(base + "/", { waitUntil: "load", timeout: T });
  await page.waitForFunction(() => window.cicada && window.cicada.state.rows && window.cicada.state.rows.length > 400, null, {
    timeout: T,
  });
  const r = await page.evaluate(async () => {
    const get = async () => (await fetch("./stats/requests", { cache: "no-store" })).text();
    const a = await get();
    await new Promise((res) => setTimeout(res, 1500));
    const b = await get();
    const datas = [JSON.parse(a), JSON.parse(b)];
    const tbody = document.querySelector("#stats-rows");
    const layout = () => document.querySelector("#stats-table").getBoundingClientRect();
    // Cold: into an empty table.
    tbody.innerHTML = "";
    let t0 = performance.now();
    window.cicada.renderStats(datas[0]);
    layout();
    const coldMs = performance.now() - t0;
    // Warm: alternating two different snapshots, as successive polls are.
    const times = [];
    const parses = [];
    const scripts = [];
    for (let i = 0; i < 20; i++) {
      t0 = performance.now();
      const d = JSON.parse(i % 2 ? b : a);
      parses.push(performance.now() - t0);
      t0 = performance.now();
      window.cicada.renderStats(d);
      scripts.push(performance.now() - t0);
      layout();
      times.push(performance.now() - t0);
    }
    const fulls = [];
    for (let i = 0; i < 10; i++) {
      t0 = performance.now();
      await window.cicada.refresh();
      layout();
      fulls.push(performance.now() - t0);
    }
    const med = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)];
    const mx = (xs) => Math.max(...xs);
    return {
      bytes: a.length,
      rows: window.cicada.state.rows.length + 1,
      renderedRows: tbody.rows.length,
      coldRenderMs: coldMs,
      parseMedianMs: med(parses),
      renderMedianMs: med(times.slice()),
      scriptMedianMs: med(scripts),
      renderMaxMs: mx(times),
      refreshMedianMs: med(fulls.slice()),
      refreshMaxMs: mx(fulls),
    };
  });
  Object.assign(result, r);
  await shot(page, "perf-1000-names.png");
  // Scrolling renders the rows that come into view.
  const seen = await page.evaluate(async () => {
    const box = document.getElementById("stats-box");
    box.scrollTop = 250 * window.cicada.state.rowH;
    await new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));
    const names = [...document.querySelectorAll("#stats-rows td.name")].map((td) => td.textContent);
    const want = window.cicada.state.rows[250].name;
    return { want, found: names.includes(want), rendered: names.length };
  });
  check(seen.found, "row 250 not rendered after scrolling: " + JSON.stringify(seen));
  await shot(page, "perf-scrolled.png");
}

// luminance of a CSS rgb() colour, 0 (black) to 1 (white).
function luminance(rgb) {
  const [r, g, b] = rgb.match(/\d+/g).map(Number);
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

const MIN_NAME_PX = 200;

async function layout() {
  result.nameWidths = {};
  for (const width of [800, 1280]) {
    const page = await browser.newPage({ viewport: { width, height: 800 } });
    await watch(page, "layout-" + width);
    await page.goto(base + "/", { waitUntil: "load", timeout: T });
    await page.waitForFunction(() => document.querySelectorAll("#stats-rows tr").length >= 3, null, { timeout: T });
    const m = await page.evaluate(() => {
      const th = document.querySelector("#stats-table th:nth-child(2)");
      const td = document.querySelector("#stats-rows td.name");
      const box = document.getElementById("stats-box");
      const before = td.getBoundingClientRect().width;
      // Scroll sideways: the Name column stays in view (sticky).
      box.scrollLeft = box.scrollWidth;
      const boxLeft = box.getBoundingClientRect().left;
      const nameLeft = td.getBoundingClientRect().left;
      return { th: th.getBoundingClientRect().width, td: before, scrolls: box.scrollWidth > box.clientWidth, boxLeft, nameLeft, scrollLeft: box.scrollLeft };
    });
    await shot(page, `layout-${width}.png`);
    check(m.th >= MIN_NAME_PX && m.td >= MIN_NAME_PX, `Name column at ${width} px is ${m.td} px wide: ` + JSON.stringify(m));
    if (m.scrolls) check(m.scrollLeft > 0 && Math.abs(m.nameLeft - m.boxLeft) <= 2, `Name column scrolled out of view at ${width} px: ` + JSON.stringify(m));
    result.nameWidths[width] = Math.round(m.td);
    await page.close();
  }

  // Dark theme: the system's preference, then the toggle (kept across a
  // reload), with the charts re-created in the theme's colours.
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: "dark" });
  const page = await ctx.newPage();
  await watch(page, "dark");
  await page.goto(base + "/#charts", { waitUntil: "load", timeout: T });
  await page.waitForFunction(() => document.querySelectorAll("#tab-charts .uplot").length >= 3, null, { timeout: T });
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const theme = () => page.evaluate(() => window.cicada.effectiveTheme());
  check((await theme()) === "dark" && luminance(await bg()) < 0.3, "prefers-color-scheme dark not followed: " + (await bg()));
  await shot(page, "dark-system.png");
  await page.click("#btn-theme");
  check((await theme()) === "light" && luminance(await bg()) > 0.7, "toggle to light failed: " + (await bg()));
  await page.waitForFunction(() => document.querySelectorAll("#tab-charts .uplot").length >= 3, null, { timeout: T });
  await page.reload({ waitUntil: "load", timeout: T });
  check((await theme()) === "light", "toggled theme not kept across a reload");
  await page.click("#btn-theme");
  check((await theme()) === "dark" && luminance(await bg()) < 0.3, "toggle back to dark failed: " + (await bg()));
  await page.waitForFunction(() => document.querySelectorAll("#tab-charts .uplot").length >= 3, null, { timeout: T });
  await shot(page, "dark-toggle.png");
  result.dark = true;
  await ctx.close();
}

async function shape(page) {
  await page.goto(base + "/", { waitUntil: "load", timeout: T });
  await page.waitForSelector("#start-dialog[open]", { timeout: T });
  const inputs = await page.$$eval("#start-form input[name=user_count], #start-form input[name=spawn_rate], #start-form input[name=run_time]", (xs) =>
    xs.map((x) => ({ name: x.name, disabled: x.disabled, title: x.title, value: x.value })),
  );
  check(inputs.length === 3 && inputs.every((x) => x.disabled && /load shape/.test(x.title)), "start inputs not disabled with the reason: " + JSON.stringify(inputs));
  check(await page.isVisible("#start-form .shape-note"), "start form does not say a shape drives the test");
  await shot(page, "shape-start.png");
  await page.click("#start-submit");
  await page.waitForSelector("#start-dialog", { state: "hidden", timeout: T });
  await page.waitForFunction(() => document.querySelector("#users").textContent === "6", null, { timeout: T });
  await page.click("#btn-edit");
  await page.waitForSelector("#edit-dialog[open]", { timeout: T });
  check(await page.isDisabled("#edit-submit"), "Edit's submit enabled during a shape run");
  check(await page.isDisabled('#edit-form input[name="user_count"]'), "Edit's user count enabled during a shape run");
  check(await page.isVisible("#edit-form .shape-note"), "edit form does not say why");
  await shot(page, "shape-edit.png");
  result.shapeUsers = Number(await page.textContent("#users"));
}


async function phases(page) {
  await page.goto(base + "/", { waitUntil: "load", timeout: T });
  await page.waitForSelector("#start-dialog[open]", { timeout: T });
  await page.click("#start-submit");
  await page.waitForSelector("#start-dialog", { state: "hidden", timeout: T });
  await page.waitForSelector("#phases-tab:not([hidden])", { timeout: T });
  await page.click("#phases-tab");
  await page.waitForFunction(() => document.querySelectorAll("#phases-table tbody tr").length > 0, null, { timeout: T });
  const rows = await page.$$eval("#phases-table tbody tr", (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const phasesSeen = [...new Set(rows.map((r) => r[2]))].sort();
  check(JSON.stringify(phasesSeen) === JSON.stringify(["body", "connect", "ttfb"]), "phases shown: " + JSON.stringify(phasesSeen));
  check(rows.some((r) => r[1] === "Aggregated"), "no Aggregated phase rows");
  await shot(page, "phases.png");
  result.phaseRows = rows.length;
}

async function thresholds(page) {
  await page.goto(base + "/", { waitUntil: "load", timeout: T });
  await page.waitForSelector("#start-dialog[open]", { timeout: T });
  await page.click("#start-submit");
  await page.waitForSelector("#start-dialog", { state: "hidden", timeout: T });
  await page.waitForSelector("#thresholds-box:not([hidden])", { timeout: T });
  await page.waitForFunction(() => document.querySelector("#thresholds-summary").textContent === "1 of 3 failing", null, { timeout: T });
  check((await page.textContent("#thresholds-count")) === "1", "failing badge: " + (await page.textContent("#thresholds-count")));
  // The fake runner drops iterations too: the Dropped box shows them, by name in its tooltip.
  await page.waitForSelector("#dropped-box:not([hidden])", { timeout: T });
  const dropTitle = await page.getAttribute("#dropped-box", "title");
  check(/^Dropped iterations by name:\n\d+ {2}GET \/\n\d+ {2}TASK think$/.test(dropTitle || ""), "Dropped box title: " + JSON.stringify(dropTitle));
  await page.click("#thresholds-summary"); // the box opens the tab
  await page.waitForSelector("#tab-thresholds.active", { timeout: T });
  await page.waitForFunction(() => document.querySelectorAll("#thresholds-table tbody tr").length === 3, null, { timeout: T });
  const rows = () =>
    page.$$eval("#thresholds-table tbody tr", (trs) => trs.map((tr) => ({ cls: tr.className, cells: [...tr.cells].map((c) => c.textContent) })));
  const before = await rows();
  const want = [
    { cls: "thr-ok", cells: ["p99<500ms", "12.50 ms", "ok", ""] },
    { cls: "thr-failing", cells: ["fail_ratio<0.01 window=10s abort_on_fail", "25.00%", "FAILING", "window of 10s not yet full: the run so far"] },
    { cls: "thr-waiting", cells: ["rps{GET /<b>x</b>}>1", "n/a", "waiting", "no request of this name"] },
  ];
  check(JSON.stringify(before) === JSON.stringify(want), "threshold rows: " + JSON.stringify(before));
  // The name is text, not markup.
  check((await page.$$("#thresholds-table b")).length === 0, "a threshold's name was parsed as HTML");
  await shot(page, "thresholds-failing.png");
  // The fake master's thresholds all pass once the test is stopped.
  await page.click("#btn-stop");
  await page.waitForFunction(() => document.querySelector("#thresholds-summary").textContent === "3 ok", null, { timeout: T });
  await page.waitForFunction(() => [...document.querySelectorAll("#thresholds-table tbody tr")].every((tr) => tr.className === "thr-ok"), null, { timeout: T });
  check((await page.textContent("#thresholds-count")) === "", "failing badge after the states changed");
  await shot(page, "thresholds-ok.png");
  result.thresholdRows = before.length;
}

async function picker(page) {
  await page.goto(base + "/", { waitUntil: "load", timeout: T });
  await page.waitForSelector("#start-dialog[open]", { timeout: T });
  check(await page.isVisible("#class-picker"), "class picker not shown");
  const boxes = await page.$$eval("#class-picker-list input", (xs) => xs.map((x) => ({ name: x.name, value: x.value, checked: x.checked })));
  check(boxes.length > 0 && boxes.every((b) => b.name === "user_classes" && b.checked), "class picker boxes: " + JSON.stringify(boxes));
  await shot(page, "picker.png");
  await page.click("#start-submit");
  await page.waitForSelector("#start-dialog", { state: "hidden", timeout: T });
  result.classes = boxes.map((b) => b.value);
}

// checkAligned checks that keyed columns (error kinds, workers) that
// appeared mid-test were padded to the length of the time column by the
// incremental merge, and returns the error kinds seen.
async function checkAligned(page) {
  const misaligned = await page.evaluate(() => {
    const h = window.cicada.state.history;
    const bad = [];
    for (const [k, col] of Object.entries(h)) {
      if (Array.isArray(col)) {
        if (col.length !== h.time.length) bad.push(k);
      } else {
        for (const [key, c] of Object.entries(col)) if (c.length !== h.time.length) bad.push(k + "/" + key);
      }
    }
    return bad;
  });
  check(misaligned.length === 0, "history columns not aligned with time: " + misaligned);
  return page.evaluate(() => Object.keys(window.cicada.state.history.conn_errors).length);
}

let exitCode = 0;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, acceptDownloads: true });
  await watch(page, "dashboard");
  if (mode === "perf") await perf(page);
  else if (mode === "layout") await layout();
  else if (mode === "shape") await shape(page);
  else if (mode === "picker") await picker(page);
  else if (mode === "phases") await phases(page);
  else if (mode === "thresholds") await thresholds(page);
  else await flow(page);
  if (problems.length) throw new Error(problems.join("\n"));
  result.ok = true;
} catch (e) {
  result.ok = false;
  result.error = String(e && e.stack ? e.stack : e);
  exitCode = 1;
  try {
    const pages = browser.contexts().flatMap((c) => c.pages());
    if (pages[0]) await pages[0].screenshot({ path: path.join(artifacts, "failure.png") });
  } catch {}
} finally {
  await browser.close();
}
console.log("E2E_RESULT " + JSON.stringify(result));
process.exit(exitCode);
