#!/usr/bin/python3
"""Replays a stats scenario through Locust's own stats code (Debian's
python3-locust 2.12.1) and writes the outputs package stats must reproduce.

Usage: /usr/bin/python3 locust_golden.py SCENARIO.json OUTDIR

Every worker of the scenario is a Locust RequestStats fed with
log_request/log_error as a Python worker's request event would; at a
"report" event the worker's report is produced by Locust's own
report_to_master listener, sent through msgpack like the real wire, and
merged into the master RequestStats by Locust's worker_report listener.
time.time is replaced by a fake clock set from each event's "t" (unix ns).
Outputs are written with Locust's own table, CSV and percentile functions.
"""
import csv
import io
import json
import os
import sys
import tempfile
import time
import types

NOW = [0.0]
time.time = lambda: NOW[0]

import msgpack  # noqa: E402
from locust import stats as ls  # noqa: E402
from locust.event import Events  # noqa: E402
from locust.runners import Runner  # noqa: E402


class Err(Exception):
    """An exception whose repr is the given text, as a worker sends it."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text

    def __repr__(self):
        return self.text


def settime(ns):
    NOW[0] = float(ns) / 1e9


def fl(x):
    return None if x is None else repr(float(x))


def norm_entry(e):
    return {
        "name": e["name"],
        "method": e["method"],
        "last_request_timestamp": fl(e["last_request_timestamp"]),
        "start_time": fl(e["start_time"]),
        "num_requests": e["num_requests"],
        "num_none_requests": e["num_none_requests"],
        "num_failures": e["num_failures"],
        "total_response_time": fl(e["total_response_time"]),
        "max_response_time": fl(e["max_response_time"]),
        "min_response_time": fl(e["min_response_time"]),
        "total_content_length": e["total_content_length"],
        "response_times": {str(int(k)): v for k, v in e["response_times"].items()},
        "num_reqs_per_sec": {str(int(k)): v for k, v in e["num_reqs_per_sec"].items()},
        "num_fail_per_sec": {str(int(k)): v for k, v in e["num_fail_per_sec"].items()},
    }


def norm_report(worker, data):
    return {
        "worker": worker,
        "stats": [norm_entry(e) for e in data["stats"]],
        "stats_total": norm_entry(data["stats_total"]),
        "errors": {
            k: {"name": v["name"], "method": v["method"], "error": v["error"], "occurrences": v["occurrences"]}
            for k, v in data["errors"].items()
        },
        "user_classes_count": data["user_classes_count"],
        "user_count": data["user_count"],
    }


def console(master, width):
    ls.STATS_NAME_WIDTH = width
    out = []
    for current in (True, False):
        out += [l + "\n" for l in ls.get_stats_summary(master, current)] + ["\n"]
    out += [l + "\n" for l in ls.get_percentile_stats_summary(master)] + ["\n"]
    if master.errors:
        out += [l + "\n" for l in ls.get_error_report_summary(master)]
    ls.STATS_NAME_WIDTH = 80
    return "".join(out)


def numbers(master):
    lines = []
    for e in ls.sort_stats(master.entries) + [master.total]:
        cps = [e.get_current_response_time_percentile(p) for p in ls.PERCENTILES_TO_REPORT]
        lines.append(
            " ".join(
                [
                    repr(e.method),
                    repr(e.name),
                    "median=" + repr(e.median_response_time),
                    "avg=" + repr(e.avg_response_time),
                    "min=" + repr(e.min_response_time),
                    "max=" + repr(e.max_response_time),
                    "cur_rps=" + repr(float(e.current_rps)),
                    "cur_fail=" + repr(float(e.current_fail_per_sec)),
                    "tot_rps=" + repr(float(e.total_rps)),
                    "tot_fail=" + repr(float(e.total_fail_per_sec)),
                    "fail_ratio=" + repr(float(e.fail_ratio)),
                    "acl=" + repr(e.avg_content_length),
                    "p=" + ",".join(str(int(e.get_response_time_percentile(p))) for p in ls.PERCENTILES_TO_REPORT),
                    "cp=" + ",".join(str(v if v is None else int(v)) for v in cps),
                ]
            )
            + "\n"
        )
    return "".join(lines)


def csv_text(fn):
    buf = io.StringIO(newline="")
    fn(csv.writer(buf))
    return buf.getvalue()


def main():
    scenario_path, outdir = sys.argv[1], sys.argv[2]
    with open(scenario_path) as f:
        sc = json.load(f)
    os.makedirs(outdir, exist_ok=True)
    settime(sc["start"])
    master = ls.RequestStats()
    m_events = Events()
    ls.setup_distributed_stats_event_listeners(m_events, master)
    runner = types.SimpleNamespace(exceptions={}, user_count=0)
    env = types.SimpleNamespace(stats=master, runner=runner)
    workers = {}
    for w in sc["workers"]:
        st = ls.RequestStats(use_response_times_cache=False)
        ev = Events()
        ls.setup_distributed_stats_event_listeners(ev, st)
        workers[w] = (st, ev)
    csvw = ls.StatsCSV(env, ls.PERCENTILES_TO_REPORT)
    tmp = tempfile.mkdtemp()
    hist = {}
    for full in (False, True):
        hw = ls.StatsCSVFileWriter(env, ls.PERCENTILES_TO_REPORT, os.path.join(tmp, "h%d" % full), full_history=full)
        buf = io.StringIO(newline="")
        wr = csv.writer(buf)
        wr.writerow(hw.stats_history_csv_columns)
        hist[full] = (hw, buf, wr)
    reports = []
    for ev in sc["events"]:
        settime(ev["t"])
        op = ev["op"]
        if op == "req":
            st = workers[ev["w"]][0]
            rt = None if ev.get("rt") is None else float(ev["rt"]) / 1e6
            st.log_request(ev["m"], ev["n"], rt, ev.get("len", 0))
            if ev.get("err") is not None:
                st.log_error(ev["m"], ev["n"], Err(ev["err"]))
        elif op == "report":
            st, wev = workers[ev["w"]]
            data = {}
            wev.report_to_master.fire(client_id=ev["w"], data=data)
            data["user_classes_count"] = ev.get("users", {})
            data["user_count"] = sum(data["user_classes_count"].values())
            wire = msgpack.unpackb(msgpack.packb(data), strict_map_key=False)
            reports.append(json.dumps(norm_report(ev["w"], wire), sort_keys=True, separators=(",", ":"), ensure_ascii=False))
            m_events.worker_report.fire(client_id=ev["w"], data=wire)
        elif op == "exception":
            Runner.log_exception(runner, ev["node"], ev["msg"], ev["tb"])
        elif op == "master_clear":
            master.clear_all()
            runner.exceptions = {}
        elif op == "master_reset":
            master.reset_all()
            if ev.get("exceptions"):
                runner.exceptions = {}
        elif op == "worker_clear":
            workers[ev["w"]][0].clear_all()
        elif op == "history":
            runner.user_count = ev.get("user_count", 0)
            for full in (False, True):
                hw, buf, wr = hist[full]
                hw._stats_history_data_rows(wr, NOW[0])
        elif op == "output":
            label = ev["label"]
            files = {
                label + "_stats.csv": csv_text(csvw.requests_csv),
                label + "_failures.csv": csv_text(csvw.failures_csv),
                label + "_exceptions.csv": csv_text(csvw.exceptions_csv),
                label + "_numbers.txt": numbers(master),
            }
            for width in sc.get("widths", [80]):
                files["%s_console_w%d.txt" % (label, width)] = console(master, width)
            for name, text in files.items():
                with open(os.path.join(outdir, name), "w", newline="") as f:
                    f.write(text)
        else:
            raise SystemExit("unknown op " + op)
    with open(os.path.join(outdir, "reports.jsonl"), "w") as f:
        f.write("".join(r + "\n" for r in reports))
    for full in (False, True):
        name = "stats_history_full.csv" if full else "stats_history.csv"
        with open(os.path.join(outdir, name), "w", newline="") as f:
            f.write(hist[full][1].getvalue())


if __name__ == "__main__":
    main()
