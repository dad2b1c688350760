#!/usr/bin/env bash
# Runs every fuzz target of the module for a short time (make fuzz, CI).
#
#   scripts/fuzz-all.sh [fuzztime]      fuzztime: a Go duration, default 5s
#
# Environment:
#   FUZZ_JOBS    targets fuzzing at once (default: 2 on a machine with 2
#                or more cores; at most the number of targets), each with
#                nproc/FUZZ_JOBS fuzzing workers (at least 1)
#   FUZZ_PKGS    the packages (go list patterns; default ./...)
#   FUZZ_MODULE  another module of the repository to fuzz instead (its
#                directory, e.g. deploy/check)
#
# How, and why not `go test -fuzz` once per target:
#   - Each package with fuzz targets is built once, instrumented
#     (go test -c -fuzz), and its targets are run from that binary, in the
#     package directory (testdata/fuzz is its seed corpus and where a
#     failing input is written), with the cache directory go test uses
#     ($GOCACHE/fuzz/<import path>). One go test -fuzz per target re-links
#     the instrumented binary each time, and go test -list builds and links
#     every package's test binary only to list its targets.
#   - FUZZ_JOBS targets fuzz at the same time, each with a share of the
#     cores, so every target still gets its full fuzztime of wall clock.
#   - A target's fuzztime is ended with SIGINT to the coordinator, not with
#     -test.fuzztime. A duration -fuzztime makes Go's fuzz coordinator
#     (internal/fuzz, go1.26) race its own deadline: its loop can see the
#     timeout context done before the cancellation has reached the child
#     context of its workers, and then returns "context deadline exceeded"
#     as the target's failure though nothing was found (golang/go#75804,
#     fixed in Go 1.27; more likely on a loaded machine). The SIGINT path
#     (signal.NotifyContext in testing/internal/testdeps) compares the
#     error with the context it cancelled, so it has no such window; a
#     real finding still fails the run ("Failing input written to ...").
#     The clock starts when the coordinator logs its first "fuzz: elapsed"
#     line, as -fuzztime's does when the coordinator starts.
set -uo pipefail
cd "$(dirname "$0")/.." && cd "${FUZZ_MODULE:-.}" || exit 2
GO=${GO:-go}
fuzztime=${1:-5s}
ncpu=$(nproc 2>/dev/null || echo 1)
jobs=${FUZZ_JOBS:-$((ncpu >= 2 ? 2 : 1))}
if ! [ "$jobs" -ge 1 ] 2>/dev/null; then
	echo "fuzz-all: FUZZ_JOBS=$jobs: want a positive number" >&2
	exit 2
fi
# The longest a coordinator may take to start fuzzing (build is done) and,
# after SIGINT, to stop its workers and exit; past either it is killed and
# the target fails.
start_limit=${FUZZ_START_LIMIT:-180}
stop_limit=${FUZZ_STOP_LIMIT:-60}

# fuzztime in microseconds
fuzz_us=$(awk -v d="$fuzztime" 'BEGIN {
	if (d ~ /^[0-9]+(\.[0-9]+)?ms$/) { sub(/ms$/, "", d); printf "%d", d * 1000; exit }
	if (d ~ /^[0-9]+(\.[0-9]+)?s$/)  { sub(/s$/, "", d);  printf "%d", d * 1e6; exit }
	if (d ~ /^[0-9]+(\.[0-9]+)?m$/)  { sub(/m$/, "", d);  printf "%d", d * 6e7; exit }
	print "bad" }')
if [ "$fuzz_us" = bad ] || [ "$fuzz_us" -le 0 ]; then
	echo "fuzz-all: fuzztime $fuzztime: want a duration such as 5s, 500ms or 2m" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-all.XXXXXX")
cleanup() {
	local f
	# The fuzz binaries still running (an interrupted make fuzz).
	for f in "$work"/*.pid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gocache=$($GO env GOCACHE)
start=$SECONDS

# Packages with a fuzz target in the files of the current build (build tags
# and GOOS respected by go list).
if ! listing=$($GO list -f '{{.ImportPath}} {{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ${FUZZ_PKGS:-./...}); then
	echo "fuzz-all: go list failed" >&2
	exit 1
fi
mapfile -t pkgs < <(while read -r ip dir files; do
	[ -n "$files" ] || continue
	(cd "$dir" && grep -lq '^func Fuzz' $files) && echo "$ip $dir"
done <<<"$listing")
if [ ${#pkgs[@]} -eq 0 ]; then
	echo "fuzz-all: no package has a fuzz target" >&2
	exit 1
fi

failed=0
targets=()
for line in "${pkgs[@]}"; do
	read -r ip dir <<<"$line"
	bin="$work/$(echo "$ip" | tr / _).test"
	if ! out=$($GO test -c -fuzz . -o "$bin" "$ip" 2>&1); then
		echo "fuzz $ip: build failed:"
		echo "$out"
		failed=1
		continue
	fi
	if ! list=$(cd "$dir" && "$bin" -test.list '^Fuzz' 2>&1); then
		echo "fuzz $ip: listing the targets failed:"
		echo "$list"
		failed=1
		continue
	fi
	for f in $(grep '^Fuzz' <<<"$list"); do
		targets+=("$ip $dir $bin $f")
	done
done
[ "$jobs" -le ${#targets[@]} ] || jobs=${#targets[@]}
[ "$jobs" -ge 1 ] || jobs=1
workers=$((ncpu / jobs))
[ "$workers" -ge 1 ] || workers=1
echo "fuzz: ${#targets[@]} targets in ${#pkgs[@]} packages built in $((SECONDS - start)) s;" \
	"fuzzing $jobs at a time for $fuzztime each, $workers worker(s) each"

# fuzz_one IP DIR BIN TARGET N: one target; its report goes to stdout in
# one piece, its status to $work/N.rc.
fuzz_one() {
	local ip=$1 dir=$2 bin=$3 f=$4 n=$5
	local log="$work/$n.log" rc=0 t0=$SECONDS why=""
	: >"$log"
	(cd "$dir" && exec "$bin" -test.paniconexit0 -test.run '^$' -test.fuzz "^$f\$" \
		-test.parallel "$workers" -test.timeout 10m \
		-test.fuzzcachedir "$gocache/fuzz/$ip") >"$log" 2>&1 &
	local pid=$!
	echo "$pid" >"$work/$n.pid"
	# Wait for the coordinator (its first stats line), then fuzztime.
	local deadline=$((SECONDS + start_limit))
	while ! grep -q '^fuzz: elapsed' "$log"; do
		if ! kill -0 "$pid" 2>/dev/null; then break; fi
		if [ $SECONDS -ge $deadline ]; then
			why="no 'fuzz: elapsed' line within ${start_limit}s"
			kill -KILL "$pid" 2>/dev/null
			break
		fi
		sleep 0.05
	done
	if [ -z "$why" ] && kill -0 "$pid" 2>/dev/null; then
		# Ends early if the coordinator exits by itself (a finding).
		local end=$((${EPOCHREALTIME/[.,]/} + fuzz_us))
		while [ "${EPOCHREALTIME/[.,]/}" -lt $end ] && kill -0 "$pid" 2>/dev/null; do
			sleep 0.05
		done
		kill -INT "$pid" 2>/dev/null
		deadline=$((SECONDS + stop_limit))
		while kill -0 "$pid" 2>/dev/null; do
			if [ $SECONDS -ge $deadline ]; then
				why="did not stop within ${stop_limit}s of SIGINT"
				kill -KILL "$pid" 2>/dev/null
				break
			fi
			sleep 0.05
		done
	fi
	wait "$pid" || rc=$?
	rm -f "$work/$n.pid"
	[ -z "$why" ] || rc=1
	{
		if [ $rc -eq 0 ]; then
			echo "fuzz $ip $f: ok ($((SECONDS - t0)) s)"
			tail -n 3 "$log"
		else
			echo "fuzz $ip $f: FAIL (exit $rc${why:+, $why})"
			tail -n 40 "$log"
		fi
	} >"$log.report"
	cat "$log.report"
	echo "$rc" >"$work/$n.rc"
}

n=0
for tg in "${targets[@]}"; do
	read -r ip dir bin f <<<"$tg"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	n=$((n + 1))
	fuzz_one "$ip" "$dir" "$bin" "$f" "$n" &
done
wait
for ((i = 1; i <= n; i++)); do
	rc=$(cat "$work/$i.rc" 2>/dev/null || echo missing)
	[ "$rc" = 0 ] || failed=1
done
echo "fuzz: ${#targets[@]} targets in $((SECONDS - start)) s"
exit $failed
