// Package stats is cicada's statistics engine: Locust-compatible request
// statistics on both sides of a Locust cluster, exact latency histograms
// beside them, and Locust's console tables and CSV files.
//
// Worker side: a Recorder records samples from many goroutines (Record is
// allocation-free once an entry exists) and produces Locust's periodic delta
// report, a *protocol.StatsReport, resetting itself as a Locust worker does.
// Engines that count requests themselves (the data plane's stacks) add a
// whole interval of one name at once with RecordBulk (a Bulk: counts,
// failures by text, Locust's buckets, sum/min/max, size), which gives the
// report the same samples recorded one by one would (exact histogram
// included when the Bulk carries µs times; see Bulk.Exact).
//
// Master side: Stats merges reports from Python and cicada workers exactly as
// Locust 2.12.1's master does (locust/stats.py,
// setup_distributed_stats_event_listeners.on_worker_report and
// StatsEntry.extend) and computes medians, percentiles, current and total
// rates and the per-second snapshots behind the "current" percentiles as
// Locust does (StatsEntry). Snapshot returns an immutable view that the
// writers in this package render byte-for-byte as Locust 2.12.1 does
// (locust/stats.py: get_stats_summary, get_percentile_stats_summary,
// get_error_report_summary, StatsCSV and StatsCSVFileWriter): the
// periodic and final stats tables, the percentile table, the error report,
// _stats.csv, _stats_history.csv, _failures.csv and _exceptions.csv. A
// standalone cicada process goes through the same path: Recorder → Report →
// Merge.
//
// Exact latencies: every entry also keeps a mergeable log-linear histogram
// at microsecond resolution (see ExactRelativeError), sent to the master in
// StatsEntry.Exact, which Python masters ignore. A cicada master tracks per
// entry whether every report with timed samples carried one
// (EntryStats.ExactComplete) and then offers exact percentiles beside
// Locust's (EntryStats.ExactPercentile, Format.Exact).
//
// Known, documented differences from Locust:
//   - The Recorder sums response times exactly in integer nanoseconds where
//     Python adds float milliseconds one by one (last-bit differences in
//     total_response_time; the golden tests use samples whose sums are exact
//     either way).
//   - A bucket key of 100 ms is a Python int when the first sample filed
//     under it was below 100 ms (round(99.5) == 100) and a float otherwise;
//     the wire loses that distinction, and MedianRepr prints every key of 100
//     and above as a float ("100.0"). Only the CSV median column can show
//     the difference.
//   - The wire's error map has no order, so the error report orders the new
//     errors of one report by FirstSeen (sent by cicada and Locust ≥ 2.44
//     workers), then by key; a Python 2.12.1 master uses the worker's
//     insertion order, which is the same order for cicada workers.
//   - A standalone Locust caches the "current" percentile snapshots under
//     the previous second while logging; a master (and cicada standalone,
//     which goes through Merge) under the new second after merging.
//   - Exception nodes keep insertion order (Python prints a set).
//   - Sums saturate where Python's ints would grow: a count, size or bucket
//     that would pass math.MaxInt64 stays there (Merge, the Recorder and
//     the per-second counts), a float sum stays at ±math.MaxFloat64, and the
//     tables print a float beyond the int64 range as the nearest int64. An
//     exact histogram whose count would pass 2^64 is refused (the entry is
//     then not exact-complete). On a master this can only come from a
//     hostile worker: protocol.Decode refuses NaN, infinite and negative
//     values (protocol.ErrOutOfRange), and Merge ignores a NaN start time.
//   - The Recorder counts a negative response size as 0.
//   - Distinct rows are capped (Options; a Locust master keeps every name,
//     error and traceback, several KB each, without bound): beyond
//     DefaultMaxEntries (10,000) distinct (method, name) entries, requests
//     of further names are counted under one entry with method OtherMethod
//     ("OTHER") and name OtherName ("(other names)"); beyond
//     DefaultMaxErrors (10,000) error rows, further errors under one row
//     (OTHER, "(other names)", OtherError "(other errors)"); beyond
//     DefaultMaxExceptions (1,000) tracebacks, further exceptions under
//     OtherException. A warning is logged the first time each cap folds a
//     row in a test. The Recorder applies the same entry cap (and the error
//     cap per report window, folding into OtherError of the entry), so a
//     cicada worker's report stays within protocol.MaxReportEntries, which
//     a master's decoder enforces on every report.
//   - Response-time bucket keys off Locust's dense grid (100 s and more, or
//     not rounded as Locust rounds) are kept as sent up to
//     DefaultMaxBuckets (100,000) over all entries (Options.MaxBuckets);
//     beyond, a new such key counts under the largest power of two not
//     above it, so distinct keys from a hostile worker cannot grow a master
//     without bound.
//   - A master stores names, methods, error texts and keys, exception
//     messages, tracebacks and nodes of at most DefaultMaxText (16 KiB)
//     bytes (Options.MaxText); longer ones are cut and end with
//     TruncatedMark, so that the capped rows are bounded in bytes too.
//   - The console tables and the error report print at most Format.MaxRows
//     (DefaultMaxRows, 1,000) rows and then a line counting the rows left
//     out; the CSV files and snapshots keep every row the caps allow.
//
// Per-phase timings (phases.go, cicada's own): a Recorder keeps, beside
// each entry's Locust numbers, exact histograms of the DNS, connect, TLS,
// time-to-first-byte and body times of its requests (RecordWithPhases) and
// sends them under the entry key "cicada_phases"; a master adds them per
// entry and into the Aggregated row (EntryStats.Phases: counts, averages,
// exact percentiles) and writes them to <prefix>_phases.csv
// (WritePhasesCSV). Locust's response times do not change.
//
// The golden tests in golden_test.go replay the scenarios in
// testdata/scenarios through this package and through Locust's own stats
// code (testdata/locust_golden.py, run with /usr/bin/python3) and require
// identical reports, tables, CSV files, medians, percentiles and rates.
//
// Arrival-rate tests (issue 13; rate.go): Recorder.RecordCorrected puts the
// service time in Locust's fields and the time from the iteration's due
// moment (wrk2's correction) in the exact histogram, so Locust's tables keep
// Locust's numbers and the exact percentiles carry the corrected ones;
// Recorder.AddDropped counts dropped iterations (StatsReport.Dropped),
// summed by Merge into Snapshot.Total.Dropped until Clear or Reset;
// Recorder.AddDroppedFor also attributes them to a request name
// (StatsReport.DroppedBy, Snapshot.DroppedBy, EntryStats.Dropped;
// droppedby.go).
package stats
