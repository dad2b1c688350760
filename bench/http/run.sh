#!/usr/bin/env bash
# HTTP load-generator benchmark: cicada's worker/httpc vs wrk vs Locust
# FastHttpUser, interleaved against one nginx (1 worker, 128-byte page,
# access log in a temp dir), then idle keep-alive user memory of httpc vs
# Locust. Bounded: about 2 minutes. Needs nginx, wrk and /usr/bin/locust.
#
#   ROUNDS=2 DURATION=5 USERS=50 IDLE_FROM=5000 IDLE_TO=15000 bench/http/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}
USERS=${USERS:-50}
IDLE_FROM=${IDLE_FROM:-5000}
IDLE_TO=${IDLE_TO:-15000}
PORT=${PORT:-$((20000 + RANDOM % 20000))}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
LOCUST=${LOCUST:-/usr/bin/locust}

for bin in "$NGINX" wrk "$LOCUST"; do
	command -v "$bin" >/dev/null || { echo "bench/http: $bin not found" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/cicada-bench-http.XXXXXX)
NGINX_PID=
cleanup() {
	if [ -n "$NGINX_PID" ]; then
		kill "$NGINX_PID" 2>/dev/null || true
		wait "$NGINX_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

go build -o "$TMP/benchtool" ./bench/http/benchtool
CGO_ENABLED=0 go build -o "$TMP/cicada" ./cmd/cicada
# cicada itself (standalone: master and worker in one process), as a user runs it.
printf 'users:\n  - name: NoWait\n    wait: constant(0)\n    tasks: [{path: /}]\n' >"$TMP/nowait.yaml"
printf 'users:\n  - name: HelloWorldUser\n    wait: constant(900)\n    tasks: [{path: /}]\n' >"$TMP/idle.yaml"

mkdir -p "$TMP/www" "$TMP/logs"
# The same 128-byte page as the built-in target (target.DefaultBody).
printf '<!DOCTYPE html>\n<html>\n<head><title>cicada</title></head>\n<body><h1>cicada target</h1><p>It works. Go ahead.</p></body>\n</html>\n' >"$TMP/www/index.html"
[ "$(wc -c <"$TMP/www/index.html")" -eq 128 ] || { echo "page is not 128 bytes" >&2; exit 1; }
# nginx from internal/testpeer (one serving process, the page as a static
# file, access log counted by benchtool measure), ended by its PID.
"$TMP/benchtool" nginx -bin "$NGINX" -dir "$TMP" -root "$TMP/www" -port "$PORT" >"$TMP/nginx.info" 2>&1 &
NGINX_PID=$!
for _ in $(seq 200); do
	grep -q '^nginx pid=' "$TMP/nginx.info" && break
	kill -0 "$NGINX_PID" 2>/dev/null || { cat "$TMP/nginx.info" >&2; exit 1; }
	sleep 0.1
done
grep -q '^nginx pid=' "$TMP/nginx.info" || { echo "bench/http: nginx did not start" >&2; cat "$TMP/nginx.info" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
echo "nginx $("$NGINX" -v 2>&1 | sed 's/.*\///') ($(cat "$TMP/nginx.info")), page 128 bytes; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"

M="$TMP/benchtool measure -log $TMP/access.log"
RESULTS="$TMP/results"
: >"$RESULTS"
echo "== throughput: $USERS connections, ${DURATION}s each, $ROUNDS interleaved rounds"
for r in $(seq "$ROUNDS"); do
	$M -name httpc -- "$TMP/benchtool" load -url "$URL" -users "$USERS" -duration "${DURATION}s" 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT|httpc'
	$M -name cicada -- "$TMP/cicada" -f "$TMP/nowait.yaml" --headless -u "$USERS" -r "$USERS" -t "${DURATION}s" \
		-H "$URL" --only-summary --loglevel ERROR 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT'
	$M -name wrk -- wrk -t1 -c"$USERS" -d"${DURATION}s" "$URL/" 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT|Requests/sec'
	$M -name locust -- "$LOCUST" -f bench/http/locust_load.py --headless -u "$USERS" -r "$USERS" -t "${DURATION}s" \
		-H "$URL" --only-summary --loglevel ERROR 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT'
done

echo "== idle keep-alive users: RSS growth from $IDLE_FROM to $IDLE_TO users (one request each, then wait 900 s)"
$M -name httpc-idle -rss-at "$IDLE_FROM,$IDLE_TO" -timeout 60s -- \
	"$TMP/benchtool" idle -url "$URL" -users "$IDLE_TO" -rate 3000 -hold 60s 2>&1 | tee -a "$RESULTS" | grep -E "RESULT|RSS|idle:"
$M -name cicada-idle -rss-at "$IDLE_FROM,$IDLE_TO" -timeout 60s -- \
	"$TMP/cicada" -f "$TMP/idle.yaml" --headless -u "$IDLE_TO" -r 3000 -t 60s -H "$URL" --only-summary --loglevel ERROR \
	2>&1 | tee -a "$RESULTS" | grep -E "RESULT|RSS|idle:"
$M -name locust-idle -rss-at "$IDLE_FROM,$IDLE_TO" -timeout 75s -- \
	"$LOCUST" -f bench/http/locust_idle.py --headless -u "$IDLE_TO" -r 1500 -t 75s -H "$URL" --only-summary --loglevel ERROR \
	2>&1 | tee -a "$RESULTS" | grep -E "RESULT|RSS|idle:"

echo "== summary (median over rounds; rps/core = requests per CPU-second of the generator)"
grep '^RESULT' "$RESULTS" | awk '
	/rps=/ {
		name=$2
		for (i = 3; i <= NF; i++) { split($i, kv, "="); v[name, kv[1], ++n[name, kv[1]]] = kv[2] }
		names[name] = 1
	}
	/idle_bytes_per_user=/ { split($3, kv, "="); idle[$2] = kv[2] }
	function median(name, key,   k, i, j, t, a) {
		k = n[name, key]
		for (i = 1; i <= k; i++) a[i] = v[name, key, i]
		for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return a[int((k + 1) / 2)]
	}
	END {
		printf "%-10s %10s %10s %12s\n", "generator", "req/s", "cpu cores", "req/s/core"
		split("cicada httpc wrk locust", order, " ")
		for (o = 1; o <= 4; o++) { g = order[o]; if (g in names)
			printf "%-10s %10d %10.2f %12d\n", g, median(g, "rps"), median(g, "cpu_cores"), median(g, "rps_per_core") }
		for (g in idle) printf "%-12s RSS growth %d bytes per idle keep-alive user\n", g, idle[g]
	}'
