#!/usr/bin/env bash
# The race stage of make test: every package under -race, except the
# capacity searches in the namespace lab (cmd/cicada's TestBenchLab*), which
# run at the same time in a second go test without -race.
#
# Why: those searches measure. Under -race the lab's target (the same test
# binary) runs 5-10 times slower, so a device under test with a known limit
# (300 TLS transactions/s) became slower than its limit and the search
# rightly found less. Their code is race-tested by the unit and end-to-end
# tests (capacity/..., cmd/cicada's TestBench* outside the lab). Run beside
# the race stage they wait on trials (about 5 % of a core), which takes
# about five minutes off the longest package's serial run.
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
lab='^TestBenchLab'
log=$(mktemp)
CGO_ENABLED=1 $GO test -count=1 -timeout 15m -run "$lab" ./cmd/cicada/ >"$log" 2>&1 &
labpid=$!
trap 'kill -INT "$labpid" 2>/dev/null; wait "$labpid"; rm -f "$log"; exit 130' INT TERM
CGO_ENABLED=1 $GO test -race -count=1 -timeout 15m -skip "$lab" "$@"
rc=$?
wait "$labpid"
labrc=$?
trap - INT TERM
echo "== the lab's capacity searches ($lab in ./cmd/cicada/, without -race): exit $labrc"
cat "$log"
rm -f "$log"
if [ $rc -ne 0 ]; then exit $rc; fi
exit $labrc
