#!/usr/bin/env bash
# Time from POST /swarm to the first counted requests and the first non-zero
# RPS in standalone mode, cicada vs Python Locust, side by side (see main.go).
# Only 127.0.0.1; bounded by -runs and -timeout.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
if [ -z "${CICADA:-}" ]; then
	make build >/dev/null
	CICADA=bin/cicada
fi
timeout "${TIMEOUT:-600}" go run ./bench/firstrps -cicada "$CICADA" "$@"
