#!/usr/bin/env bash
# Arrival-rate accuracy and the stall case, cicada beside vegeta (and k6 if
# K6=/path/to/k6 is given): see main.go and README.md. Only 127.0.0.1;
# every run bounded by -duration (+30 s), the whole by TIMEOUT.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
if [ -z "${CICADA:-}" ]; then
	make build >/dev/null
	CICADA=bin/cicada
fi
VEGETA=${VEGETA:-$(command -v vegeta || echo "$(go env GOPATH)/bin/vegeta")}
[ -x "$VEGETA" ] || VEGETA=
timeout "${TIMEOUT:-900}" go run ./bench/rate -cicada "$CICADA" -vegeta "$VEGETA" -k6 "${K6:-}" "$@"
