#!/usr/bin/env bash
# TLS and HTTP/2 load-generator benchmark (issue 16), all against one
# https nginx (1 process, h2 + http/1.1 by ALPN, TLS 1.2/1.3, a throw-away
# ECDSA P-256 CA; access log with $ssl_session_reused):
#   1. full TLS handshakes per generator core, resumption off: cicada's
#      worker/httpc (a new connection per request) vs vegeta
#      -keepalive=false vs wrk "Connection: close"; the log's reused
#      column checks that each peer really made full handshakes;
#   2. HTTP/2 requests per generator core: httpc (10 connections x 10
#      streams) vs vegeta -http2 vs h2load (-c10 -m10);
#   3. RSS per idle held connection from 5,000 to 15,000: httpc over TLS
#      (HTTP/1.1 and h2) vs plain keep-alive (a second, plain nginx).
# Bounded: about 3 minutes. k6 is not run: the project's package list
# marks it not-to-use (AGPL). Needs nginx; vegeta (go install
# github.com/tsenart/vegeta/v12@v12.13.0), wrk and h2load (Debian
# nghttp2-client) are skipped when missing.
#
#   ROUNDS=2 DURATION=5 IDLE_FROM=5000 IDLE_TO=15000 PARTS=123 bench/tls/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"

ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-5}
USERS=${USERS:-20}
IDLE_FROM=${IDLE_FROM:-5000}
IDLE_TO=${IDLE_TO:-15000}
PARTS=${PARTS:-123} # which of the three parts to run
PORT=${PORT:-$((20000 + RANDOM % 20000))}
PLAIN_PORT=$((PORT + 1))

TMP=$(mktemp -d /tmp/cicada-bench-tls.XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

go build -o "$TMP/tlstool" ./bench/tls/tlstool
go build -o "$TMP/benchtool" ./bench/http/benchtool

start_nginx() { # dir port [-plain]
	mkdir -p "$1"
	"$TMP/tlstool" nginx -dir "$1" -port "$2" ${3:-} >"$1/info" 2>&1 &
	PIDS+=($!)
	for _ in $(seq 200); do
		grep -q '^nginx pid=' "$1/info" && return 0
		sleep 0.1
	done
	echo "bench/tls: nginx did not start" >&2
	cat "$1/info" >&2
	exit 1
}
start_nginx "$TMP/tls" "$PORT"
start_nginx "$TMP/plain" "$PLAIN_PORT" -plain
URL="https://127.0.0.1:$PORT"
CA="$TMP/tls/ca.crt"
LOG="$TMP/tls/access.log"
echo "nginx $(nginx -v 2>&1 | sed 's/.*\///'), https + h2 on $PORT; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"

M="$TMP/benchtool measure -log $LOG"
echo "GET $URL/" >"$TMP/targets"
RESULTS="$TMP/results"
: >"$RESULTS"
# reused NAME FROM: the share of resumed handshakes in the log lines after FROM.
reused() {
	tail -n +"$(($2 + 1))" "$LOG" | awk -v n="$1" '{ c[$4]++; t++ } END { printf "%s: %d requests logged, %d on resumed sessions, protocols:", n, t, c["r"]; }'
	tail -n +"$(($2 + 1))" "$LOG" | awk '{ p[$5" "$6]++ } END { for (k in p) printf " %s x%d", k, p[k]; print "" }'
}
have() { command -v "$1" >/dev/null; }

if [[ $PARTS == *1* ]]; then
echo "== 1. full TLS handshakes (resumption off, a new connection per request), $USERS concurrent, ${DURATION}s, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
	from=$(wc -l <"$LOG")
	$M -name cicada-hs -- "$TMP/tlstool" handshakes -url "$URL" -ca "$CA" -users "$USERS" -duration "${DURATION}s" 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT|handshakes:'
	reused cicada-hs "$from"
	$M -name cicada-hs-x25519 -- "$TMP/tlstool" handshakes -curves X25519 -url "$URL" -ca "$CA" -users "$USERS" -duration "${DURATION}s" 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT'
	if have vegeta; then
		from=$(wc -l <"$LOG")
		$M -name vegeta-hs -- vegeta attack -targets "$TMP/targets" -root-certs "$CA" -keepalive=false -http2=false -rate=0 \
			-max-workers "$USERS" -workers "$USERS" -duration "${DURATION}s" -output /dev/null 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT'
		reused vegeta-hs "$from"
	fi
	if have wrk; then
		from=$(wc -l <"$LOG")
		$M -name wrk-hs -- wrk -t1 -c"$USERS" -d"${DURATION}s" -H "Connection: close" "$URL/" 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT'
		reused wrk-hs "$from"
	fi
done

fi

if [[ $PARTS == *2* ]]; then
echo "== 2. HTTP/2 requests: 10 connections x 10 streams, ${DURATION}s, $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
	$M -name cicada-h2 -- "$TMP/tlstool" h2 -url "$URL" -ca "$CA" -users 10 -streams 10 -duration "${DURATION}s" 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT|h2:'
	if have vegeta; then
		$M -name vegeta-h2 -- vegeta attack -targets "$TMP/targets" -root-certs "$CA" -http2 -rate=0 -max-workers 100 -workers 100 \
			-connections 10 -duration "${DURATION}s" -output /dev/null 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT'
	fi
	if have h2load; then
		$M -name h2load -- h2load -c10 -m10 -t1 -D "$DURATION" "$URL/" 2>&1 | tee -a "$RESULTS" | grep -E 'RESULT|^requests:'
	fi
done

fi

if [[ $PARTS == *3* ]]; then
echo "== 3. idle held connections: RSS growth from $IDLE_FROM to $IDLE_TO users (one request each, then held)"
$M -name cicada-idle-tls -rss-at "$IDLE_FROM,$IDLE_TO" -timeout 90s -- \
	"$TMP/tlstool" idle -url "$URL" -ca "$CA" -users "$IDLE_TO" -rate 500 -hold 90s 2>&1 | tee -a "$RESULTS" | grep -E "RESULT|RSS|idle:"
$M -name cicada-idle-h2 -rss-at "$IDLE_FROM,$IDLE_TO" -timeout 90s -- \
	"$TMP/tlstool" idle -http2 -url "$URL" -ca "$CA" -users "$IDLE_TO" -rate 500 -hold 90s 2>&1 | tee -a "$RESULTS" | grep -E "RESULT|RSS|idle:"
"$TMP/benchtool" measure -log "$TMP/plain/access.log" -name cicada-idle-plain -rss-at "$IDLE_FROM,$IDLE_TO" -timeout 90s -- \
	"$TMP/tlstool" idle -url "http://127.0.0.1:$PLAIN_PORT" -users "$IDLE_TO" -rate 500 -hold 90s 2>&1 | tee -a "$RESULTS" | grep -E "RESULT|RSS|idle:"

fi

echo "== summary (median over rounds; req/s/core = requests per CPU-second of the generator)"
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
		printf "%-17s %10s %10s %12s\n", "generator", "req/s", "cpu cores", "req/s/core"
		split("cicada-hs cicada-hs-x25519 vegeta-hs wrk-hs cicada-h2 vegeta-h2 h2load", order, " ")
		for (o = 1; o <= 7; o++) { g = order[o]; if (g in names)
			printf "%-17s %10d %10.2f %12d\n", g, median(g, "rps"), median(g, "cpu_cores"), median(g, "rps_per_core") }
		for (g in idle) printf "%-18s RSS growth %d bytes per idle held connection\n", g, idle[g]
	}'
