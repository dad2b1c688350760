#!/usr/bin/env bash
# DEALER -> ROUTER throughput, cicada's pure-Go ZMTP (protocol/zmtp) side by
# side with pyzmq/libzmq (Debian python3-zmq), 1 KB and 100 KB frames, each
# pair as two processes over loopback. Bounded: COUNT1K/COUNT100K messages or
# TIMEOUT per measurement. Also runs the package's go test -bench.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
COUNT1K=${COUNT1K:-200000}
COUNT100K=${COUNT100K:-20000}
TIMEOUT=${TIMEOUT:-20s}
REPEAT=${REPEAT:-3}
PYTHON=${PYTHON:-/usr/bin/python3}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/zmqbench" ./bench/zmq
echo "== go test -bench (protocol/zmtp)"
go test -run '^$' -bench . -benchtime 1s ./protocol/zmtp/ 2>&1 | grep -E '^(Benchmark|ok|FAIL)' || true
echo "== DEALER -> ROUTER, two processes, loopback (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
"$bin/zmqbench" -python "$PYTHON" -pyscript bench/zmq/pyzmq_bench.py \
	-count1k "$COUNT1K" -count100k "$COUNT100K" -timeout "$TIMEOUT" -repeat "$REPEAT"
