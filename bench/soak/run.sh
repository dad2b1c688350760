#!/usr/bin/env bash
# Soak: a cicada master with real cicada workers loading `cicada target`, and
# fake workers sending hostile inputs, for DURATION (default 10m); samples the
# master's RSS, CPU, fds and threads and checks real counts and flatness (see
# README.md). CICADA=path soaks another binary (default: make build, bin/cicada).
# Only 127.0.0.1; bounded by DURATION plus a few minutes of start and stop.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
DURATION=${DURATION:-10m}
if [ -z "${CICADA:-}" ]; then
	make build >/dev/null
	CICADA=bin/cicada
fi
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/soak" ./bench/soak
# The program stops by itself after DURATION plus at most 3 minutes of start
# and stop; TIMEOUT (seconds) is only a safety net.
timeout "${TIMEOUT:-3600}" "$bin/soak" -cicada "$CICADA" -duration "$DURATION" "$@"
