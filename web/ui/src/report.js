// HTML report: draws the charts from the history embedded in the page as
// <script type="application/json" id="report-history">. Tables are rendered
// by the server, so the report stays readable without JavaScript.
import "uplot/dist/uPlot.min.css";
import { makeCharts } from "./charts.js";

const el = document.getElementById("report-history");
if (el) {
  const history = JSON.parse(el.textContent);
  if (history.time && history.time.length) {
    const ids = ["rps", "rt", "users", "conn", "connrate", "connerr"];
    makeCharts(Object.fromEntries(ids.map((id) => [id, document.getElementById("chart-" + id)])), history);
  }
}
