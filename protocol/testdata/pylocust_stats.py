#!/usr/bin/python3
"""Feed stats payloads to real Locust's master-side stats code.

Reads JSON lines {"id": str, "hex": str}: each hex is a full stats message
[type, data, node_id] as a Go worker would send it. For each, a fresh
locust.stats.RequestStats gets the payload through Locust's own worker_report
listener (handlers called directly, so exceptions are not swallowed), then
renders the console stats, percentile and error tables. Prints one JSON line
per input: {"id", "ok", "error", "num_requests", "num_failures", "p50", "p95",
"min", "max", "entries", "errors", "table"}; then "DONE <n>".
"""
import json
import sys
import traceback

import msgpack
from locust.event import Events
from locust import stats as lstats


def run(payload):
    msg = msgpack.loads(payload, raw=False, strict_map_key=False)
    typ, data, node_id = msg
    assert typ == "stats", typ
    stats = lstats.RequestStats()
    events = Events()
    lstats.setup_distributed_stats_event_listeners(events, stats)
    for handler in events.worker_report._handlers:
        handler(client_id=node_id, data=data)
    table = lstats.get_stats_summary(stats, current=False)
    table += lstats.get_percentile_stats_summary(stats)
    table += lstats.get_error_report_summary(stats)
    t = stats.total
    return {
        "num_requests": t.num_requests,
        "num_failures": t.num_failures,
        "p50": t.get_response_time_percentile(0.5),
        "p95": t.get_response_time_percentile(0.95),
        "min": t.min_response_time,
        "max": t.max_response_time,
        "entries": len(stats.entries),
        "errors": sum(e.occurrences for e in stats.errors.values()),
        "table": "\n".join(table),
    }


def main():
    n = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        n += 1
        req = json.loads(line)
        try:
            out = run(bytes.fromhex(req["hex"]))
            out["ok"] = True
        except Exception:  # noqa: BLE001 - report everything to the Go test
            out = {"ok": False, "error": traceback.format_exc()}
        out["id"] = req["id"]
        print(json.dumps(out))
    print("DONE %d" % n)


if __name__ == "__main__":
    main()
