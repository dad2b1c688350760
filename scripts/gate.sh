#!/usr/bin/env bash
# The code-health gate of `make test` (make check): lint, go.mod tidiness,
# freshness of the committed dashboard build, commit subjects.
#   scripts/gate.sh lint|tidy|web|commits|all
# A tool that is missing fails the gate under CI=true (.ci/run installs
# every tool) and is skipped with a message otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
GOLANGCI_LINT_VERSION=${GOLANGCI_LINT_VERSION:?set by the Makefile}
MAX_SUBJECT=${MAX_SUBJECT:-72}

missing() {
	if [ "${CI:-}" = true ]; then
		echo "gate: $1 is required under CI=true ($2)" >&2
		exit 1
	fi
	echo "gate: skipped: $1 not installed ($2)"
}

lint() {
	local files
	files=$(gofmt -l $(git ls-files '*.go'))
	if [ -n "$files" ]; then
		echo "gate: gofmt -l lists files to format:" >&2
		echo "$files" >&2
		exit 1
	fi
	local bin
	bin=$(command -v golangci-lint || true)
	[ -n "$bin" ] || [ ! -x "$($GO env GOPATH)/bin/golangci-lint" ] || bin=$($GO env GOPATH)/bin/golangci-lint
	if [ -z "$bin" ]; then
		missing golangci-lint "make tools"
		return 0
	fi
	local have
	have=$("$bin" version --short 2>/dev/null || true)
	if [ "v$have" != "$GOLANGCI_LINT_VERSION" ]; then
		if [ "${CI:-}" = true ]; then
			echo "gate: golangci-lint $have, want $GOLANGCI_LINT_VERSION (make tools)" >&2
			exit 1
		fi
		echo "gate: warning: golangci-lint $have, the gate pins $GOLANGCI_LINT_VERSION (make tools)"
	fi
	echo "gate: golangci-lint run ($("$bin" version --short))"
	# --allow-parallel-runners: another run on the same machine (an editor,
	# a second checkout) must not fail the gate.
	"$bin" run --allow-parallel-runners ./...
}

tidy() {
	echo "gate: go mod tidy -diff"
	if ! $GO mod tidy -diff; then
		echo "gate: go.mod/go.sum are not tidy: run go mod tidy" >&2
		exit 1
	fi
}

web() {
	if ! command -v npm >/dev/null 2>&1; then
		missing npm "apt-get install nodejs npm; the dashboard build in web/ui/dist is not checked"
		return 0
	fi
	if [ ! -x web/ui/node_modules/.bin/esbuild ]; then
		# make test installs nothing: .ci/run (or make web) runs npm ci.
		missing "web/ui's npm packages" "cd web/ui && npm ci; the dashboard build in web/ui/dist is not checked"
		return 0
	fi
	echo "gate: web/ui/dist is what web/ui/build.sh makes of web/ui/src"
	sh web/ui/build.sh >/dev/null
	if ! git diff --exit-code --stat -- web/ui/dist || [ -n "$(git status --porcelain -- web/ui/dist)" ]; then
		git status --short -- web/ui/dist >&2
		echo "gate: web/ui/dist is stale: commit the output of make web with its sources" >&2
		exit 1
	fi
}

commits() {
	local base=${GATE_BASE:-origin/main}
	if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
		echo "gate: skipped: commit subjects (no $base to compare with; set GATE_BASE)"
		return 0
	fi
	echo "gate: commit subjects since $base are at most $MAX_SUBJECT characters"
	local long
	long=$(git log --no-merges --format='%h %s' "$base..HEAD" | awk -v max="$MAX_SUBJECT" 'length($0) - index($0, " ") > max')
	if [ -n "$long" ]; then
		echo "gate: subjects longer than $MAX_SUBJECT characters (put the details in the body):" >&2
		echo "$long" >&2
		exit 1
	fi
}

case "${1:-all}" in
lint) lint ;;
tidy) tidy ;;
web) web ;;
commits) commits ;;
all) tidy; lint; web; commits ;;
*) echo "usage: $0 lint|tidy|web|commits|all" >&2; exit 2 ;;
esac
