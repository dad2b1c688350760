// Package web is cicada's web UI: Locust's HTTP API, a browser dashboard,
// the HTML report and a Prometheus /metrics endpoint. It sees the master
// only through the Runner interface defined here; cmd adapts the master to
// it.
//
// # Routes
//
// Every route of Locust 2.12.1 (locust/web.py, WebUI.__init__) plus the
// JSON routes of current Locust:
//
//	GET  /                                 dashboard (embedded assets, see web/ui)
//	POST /swarm                            start or edit a test (form-encoded)
//	GET  /stop                             stop the test (synchronous)
//	GET  /stats/reset                      reset statistics; "ok"
//	GET  /stats/requests                   live statistics (JSON, cached 2 s)
//	GET  /stats/requests/csv               _stats.csv of the current statistics
//	GET  /stats/failures/csv               _failures.csv
//	GET  /exceptions/csv                   _exceptions.csv
//	GET  /stats/requests_full_history/csv  the on-disk history file (Options.FullHistoryCSV) or 404
//	GET  /stats/report                     self-contained HTML report (?download=1)
//	GET  /exceptions                       task exceptions (JSON)
//	GET  /tasks                            task ratios (JSON)
//	GET  /logs                             master and worker log lines (HEAD ≥ 2.18)
//	GET  /worker-count                     {"worker_count": N} (HEAD ≥ 2.37)
//	GET  /stats/history                    chart history (cicada extension, for the dashboard)
//	GET  /metrics                          Prometheus text format 0.0.4 (cicada extension)
//	GET  /thresholds/live                  the thresholds' current states (cicada extension, ThresholdSource's live twin)
//	GET  /assets/..., /static/...          dashboard assets (no authentication)
//
// Common behaviour follows Flask as Locust runs it: JSON pretty-printed with
// two-space indentation, sorted keys, a trailing newline, non-ASCII escaped
// and Python's int/float distinction (0 vs 0.0); Access-Control-Allow-Origin
// "*" on every response and CORS preflights answered without credentials;
// every GET route answers HEAD; 404 for unknown paths and 405 with Allow for
// a wrong method; HTTP Basic authentication (Options.Auth) on every route
// except assets and preflights, compared in constant time.
//
// # Choices where Locust 2.12.1 and current Locust differ
//
// /stats/requests carries the union of both versions' fields, so scripts
// written for either keep working:
//
//   - Top level: 2.12.1's current_response_time_percentile_50/95 and HEAD's
//     current_response_time_percentiles object; HEAD's current_rps,
//     current_fail_per_sec, total_fail_per_sec and worker_count.
//   - total_rps keeps the 2.12.1 meaning, the Aggregated *current* RPS
//     (equal to current_rps and to stats[-1].current_rps), because that is
//     what 2.12.1 dashboards and exporters read as "RPS". HEAD's cumulative
//     rate is stats[-1].total_rps. total_fail_per_sec (HEAD only) is
//     cumulative, as in HEAD.
//   - Entries carry safe_name, ninetieth_response_time and
//     ninety_ninth_response_time (2.12.1) and response_time_percentile_0.95,
//     response_time_percentile_0.99, total_rps and total_fail_per_sec (HEAD).
//     Percentiles are integers (HEAD); the median is an int, or a float where
//     stats.EntryStats.MedianRepr says Locust has one.
//   - Error objects carry HEAD's first_seen/last_seen (null when unknown),
//     and error texts, names, exception messages and tracebacks are raw
//     strings (HEAD) rather than HTML-escaped (2.12.1), so that clients
//     can compare them with CSV files and console output.
//   - Workers carry an extra "connections" field when the worker reports it.
//   - At most 500 entries and 500 errors, as both versions.
//
// POST /swarm answers invalid input with HTTP 200 and success: false
// (Locust's exact message for run_time; HEAD's message for a missing
// user_count or spawn_rate, where 2.12.1 crashed with a 500; a count or
// rate the Runner refuses, such as one beyond the master's dispatch
// ceilings, is answered with the Runner's error). run_time is parsed by
// internal/timespan, like -t on the command line: text Locust would ignore
// after the span ("1h 20m") is refused with that message, and a span above
// timespan.Max, where Locust answers a 500, with one naming the maximum. A
// run_time
// schedules a Stop that is never cancelled, as in Locust. When a load shape
// drives the test (Status.Shape), POST /swarm needs neither user_count nor
// spawn_rate and answers Locust's "Swarming started using shape class";
// unlike Locust, which ignores them silently, it refuses a run_time and an
// edit of a running shape test, naming the reason. The CSV downloads
// use 2.12.1's file names (requests_<time()>.csv) and Options.Format, so they
// match the master's --csv files. The "Starting web interface at ..." log
// line is cmd's (Locust prints it from main.py).
//
// # Browser protections
//
// Beyond Locust, which has none of these, every response carries
// X-Frame-Options: DENY, X-Content-Type-Options: nosniff, Referrer-Policy:
// same-origin and a Content-Security-Policy: default-src 'none' for data,
// and for the dashboard and the report a policy allowing scripts, styles,
// images and fetches from this server only, plus the page's own inline
// script and style elements by SHA-256 hash (no 'unsafe-inline').
//
// The state-changing routes (POST /swarm, GET /stop, GET /stats/reset)
// refuse, with 403, a request a browser makes on behalf of another site:
// one whose Sec-Fetch-Site is not same-origin or none (typed into the
// address bar), or, from a browser without Fetch metadata, whose Origin
// or Referer names another host:port than its Host header. Requests
// without these headers (curl, Locust's scripts and tools) pass, so
// nothing changes for them. /stop and /stats/reset stay GET, as in Locust
// 2.12.1 and HEAD and as scripts call them; the cross-site check is what
// keeps a link or an image on another page from triggering them. Behind
// a reverse proxy that rewrites Host, browsers without Fetch metadata are
// refused; modern ones send Sec-Fetch-Site and pass. Read-only routes keep
// Locust's Access-Control-Allow-Origin: * and answer any site.
//
// # Limits
//
// Run and Serve bound what one client can hold, since the web port shares
// the master's file descriptors with its workers: request headers must
// arrive within 10 s and a whole request within Options.ReadTimeout (10 s),
// a response must be written within Options.WriteTimeout (1 min; GET /stop
// is exempt while the test stops), an idle keep-alive connection is closed
// after 2 min, and at most Options.MaxConns (256) connections are open at
// once: further clients wait in the kernel's accept queue, costing no file
// descriptor, until one closes. The cap protects the master's descriptors
// (and so its workers), not the UI's availability: while MaxConns slow
// clients hold their connections, a normal request waits until their
// timeouts cut them. Locust (gevent's WSGI server) has none of these
// bounds.
//
// # Concurrency
//
// Handlers run concurrently. The /stats/requests cache lock is held while
// the body is rebuilt (so concurrent pollers share one build) and is the
// only web lock held while calling the Runner; History and the run-time
// timers use their own locks and never call out while holding them.
// Background goroutines (history sampler, run-time timers) end before
// Serve returns.
//
// # Dashboard and history
//
// The dashboard (web/ui, vanilla JavaScript with uPlot, built by
// web/ui/build.sh into web/ui/dist and embedded; build with -tags dev to
// serve web/ui/dist from disk) polls the JSON routes. Its charts come from a
// History the server samples every Options.HistoryInterval while a test
// runs, so they survive a page reload; the same history feeds the report.
// GET /stats/reset keeps the history, as Locust's dashboard keeps its
// charts; a new test (a new Status.StartTime) clears it.
//
// Beyond Locust's three charts, the history carries the workers'
// connection counters (HistoryConn): open and established connections
// with a per-worker breakdown for the hover (at most MaxHistoryWorkers
// workers), new connections per second, and connection errors per second
// by kind and side (generator or target). The connection charts are shown
// only when some worker reports connections (cicada workers; Python
// workers do not). Time ticks fall on whole seconds or minutes and the
// y axes start at 0.
//
// The dashboard follows prefers-color-scheme, and a header toggle chooses
// a theme kept in localStorage; the report follows prefers-color-scheme.
// The final ratios of the report use the users per class of the moment
// the test began stopping (Status.FinalUserClassesCount), as Locust's do.
//
// Arrival-rate tests (issue 13) add, once an iteration was dropped,
// dropped_iterations to /stats/requests (top level, and per worker while
// distributed), cicada_dropped_iterations_total and
// cicada_worker_dropped_iterations_total to /metrics and a Dropped box to
// the dashboard; closed-model output is unchanged. The drops by name
// (stats.Snapshot.DroppedBy: the first request of the task each dropped
// iteration would have run) add dropped_iterations_by_name to
// /stats/requests ([{"dropped", "method", "name"}], at most 500), the
// names to the Dropped box's tooltip and a Dropped Iterations table to the
// HTML report.
//
// Thresholds: GET /thresholds serves the verdict so far
// (ThresholdSource), GET /thresholds/live every threshold's current state
// (LiveThresholdSource: ok, FAILING or waiting, with the value); the
// dashboard shows the latter in a Thresholds box and tab, hidden without
// thresholds.
package web
