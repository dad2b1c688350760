#!/usr/bin/env bash
# cicada bench's searches against devices with a known limit (issue 17), the
# kernel-socket generator beside the data plane: runs the lab tests of
# cmd/cicada (root: network namespaces under 198.18.0.0/16, removed after
# each test; skipped otherwise) and prints one table of known limit, found
# limit and search time. Bounded by the tests' own 55 s per search.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
timeout "${TIMEOUT:-600}" go test -count=1 -run 'TestBenchLab' -v ./cmd/cicada/ >"$log" 2>&1 || true
# The same searches over DPDK (a net_af_packet device) in a dpdk-tagged
# build, where libdpdk-dev is installed.
if pkg-config --exists libdpdk 2>/dev/null; then
	CGO_ENABLED=1 timeout "${TIMEOUT:-600}" go test -tags dpdk -count=1 -run 'TestDPDKBench' -v ./cmd/cicada/ >>"$log" 2>&1 || true
fi
printf '%-11s %-22s %-8s %-24s %s\n' test generator known found "search time"
grep -P '\tFIGURE\t|FIGURE\t' "$log" | sed 's/.*FIGURE\t//' | sort |
	awk -F'\t' '{ printf "%-11s %-22s %-8s %-24s %s\n", $1, $2, $3, $4, $5 }'  || true
# Skipped (not root; or the generator was the limit on a busy host) and failed
# tests, with their reasons.
grep -E -- '^--- (SKIP|FAIL)|_test\.go:[0-9]+: (found|result|the generator|bench did not|FAIL)' "$log" || true
