#!/usr/bin/env bash
# make peers (and the first step of make test): installs what the tests need
# when it is missing. Debian packages: installed with apt-get when run as
# root; otherwise it stops at once, naming the one command to run. Then, as
# any user: the dashboard's npm packages (npm ci in web/ui), the Go modules
# and the pinned golangci-lint (make tools). Idempotent: a second run
# installs nothing and takes about a second.
#
# --check: install nothing; list what is missing and exit 1 if anything is.
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
[ "${1:-}" = --check ] && check=true
GO=${GO:-go}

# The Debian packages of the tests, one home (.ci/run calls make test, which calls this):
#   gcc make git: go test -race (cgo), the Makefile, version stamps
#   python3-zmq python3-msgpack python3-locust: interop with the real Locust and pyzmq
#   nginx wrk curl: targets and comparisons; chromium: the dashboard's browser tests
#   nghttp2-client: h2load, bench/tls's HTTP/2 peer
#   iproute2 ethtool iputils-ping nftables procps: the data plane's namespace lab
#   prometheus: the /metrics scrape test
#   libdpdk-dev dpdk pkg-config libsystemd-dev: make test-dpdk (static DPDK needs libsystemd.so's link)
#   podman runc: make image and deploy/podtest's podman kube play
#   nodejs npm: the dashboard build (esbuild, uPlot) and playwright-core
pkgs=(gcc make git python3-zmq python3-msgpack python3-locust nginx wrk curl chromium nghttp2-client
	iproute2 ethtool iputils-ping nftables procps prometheus
	libdpdk-dev dpdk pkg-config libsystemd-dev podman runc nodejs npm)

if ! command -v "$GO" >/dev/null 2>&1; then
	echo "peers: Go is not on PATH: install Go 1.26 (https://go.dev/dl/) and add /usr/local/go/bin to PATH" >&2
	exit 1
fi

need=()
for pkg in "${pkgs[@]}"; do
	dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
# npm may come from elsewhere than Debian (nodesource, nvm): then it is there.
if command -v npm >/dev/null 2>&1; then
	keep=(); for p in "${need[@]}"; do [ "$p" = nodejs ] || [ "$p" = npm ] || keep+=("$p"); done
	need=("${keep[@]+"${keep[@]}"}")
fi
if [ ${#need[@]} -gt 0 ]; then
	if $check; then echo "peers: missing Debian packages: ${need[*]}"; exit 1; fi
	if [ "$(id -u)" -ne 0 ]; then
		echo "peers: missing Debian packages: ${need[*]}" >&2
		echo "peers: run once, then make test again:  sudo make peers" >&2
		exit 1
	fi
	echo "peers: apt-get install ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need[@]}" >/dev/null
fi

lint_ok=false
if command -v golangci-lint >/dev/null 2>&1 || [ -x "$($GO env GOPATH)/bin/golangci-lint" ]; then
	lint=$(command -v golangci-lint || echo "$($GO env GOPATH)/bin/golangci-lint")
	"$lint" version 2>/dev/null | grep -q "version ${GOLANGCI_LINT_VERSION#v}" && lint_ok=true
fi
npm_ok=false
[ -f web/ui/node_modules/.package-lock.json ] && [ ! web/ui/package-lock.json -nt web/ui/node_modules/.package-lock.json ] && npm_ok=true
# vegeta: bench/rate's open-model peer (MIT; k6 is AGPL and not installed).
VEGETA_VERSION=v12.13.0
vegeta_ok=false
[ -x "$($GO env GOPATH)/bin/vegeta" ] || command -v vegeta >/dev/null 2>&1 && vegeta_ok=true
if $check; then
	$vegeta_ok || { echo "peers: vegeta missing (bench/rate; go install github.com/tsenart/vegeta/v12@$VEGETA_VERSION)"; exit 1; }
	$lint_ok || { echo "peers: golangci-lint $GOLANGCI_LINT_VERSION missing (make tools)"; exit 1; }
	$npm_ok || { echo "peers: web/ui/node_modules missing or stale (npm ci in web/ui)"; exit 1; }
	echo "peers: all present"; exit 0
fi
if ! $npm_ok; then
	echo "peers: npm ci in web/ui"
	(cd web/ui && npm ci --no-audit --no-fund --loglevel=error)
fi
$GO mod download
if ! $lint_ok; then
	echo "peers: golangci-lint $GOLANGCI_LINT_VERSION (make tools)"
	$GO install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
fi
if ! $vegeta_ok; then
	echo "peers: vegeta $VEGETA_VERSION (bench/rate)"
	$GO install "github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
fi
