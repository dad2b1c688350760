#!/usr/bin/env bash
# make run: the main job on the embedded default. Starts cicada's built-in
# target server, then a cicada master with two local cicada workers running a
# short headless test against it, and prints Locust's tables. Everything it
# starts is stopped by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=./bin/cicada
SCENARIO=${SCENARIO:-examples/demo.yaml}
USERS=${USERS:-200}
RATE=${RATE:-100}
RUNTIME=${RUNTIME:-15s}
OUT=${OUT:-out/demo}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)); }
TARGET_PORT=$(free_port)
MASTER_PORT=$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

mkdir -p "$(dirname "$OUT")"
echo "== cicada target on 127.0.0.1:$TARGET_PORT"
$BIN target --listen "127.0.0.1:$TARGET_PORT" &
pids+=($!)

echo "== two cicada workers"
for i in 1 2; do
	$BIN --worker --master-host 127.0.0.1 --master-port "$MASTER_PORT" -f "$SCENARIO" --loglevel WARNING &
	pids+=($!)
done

echo "== cicada master: $USERS users at $RATE/s for $RUNTIME"
set +e
$BIN --master --headless --master-bind-host 127.0.0.1 --master-bind-port "$MASTER_PORT" \
	--expect-workers 2 --expect-workers-max-wait 30 -f "$SCENARIO" \
	-u "$USERS" -r "$RATE" -t "$RUNTIME" -H "http://127.0.0.1:$TARGET_PORT" --csv "$OUT"
rc=$?
set -e
echo "== CSV files: $(ls "$OUT"_*.csv 2>/dev/null | tr '\n' ' ')"
echo "== target served: $(curl -s "http://127.0.0.1:$TARGET_PORT/_cicada/stats" 2>/dev/null || echo '?')"
if [ "$rc" -eq 1 ]; then echo "== exit code 1: the run recorded failures, as this demo means to (its /missing task gets 404s)"; exit 0; fi
exit $rc
