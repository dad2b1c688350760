#!/usr/bin/env bash
# Runs every benchmark under bench/ in turn, each side by side with its peer
# (pyzmq, wrk, Locust). Each script is bounded in time and cleans up after itself.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
echo "== go test -bench (protocol, stats, httpc)"
go test -run '^$' -bench . -benchmem -benchtime 2000x ./protocol/ ./stats/ ./worker/httpc/ 2>&1 | grep -E '^(Benchmark|ok|PASS|FAIL)' || true
for s in bench/*/run.sh; do
	echo "== $s"
	bash "$s" || echo "$s failed with $?"
done
