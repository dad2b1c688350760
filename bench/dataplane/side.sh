#!/usr/bin/env bash
# Side-by-side figures (issue 11) against one nginx worker in the lab: new
# connections/s and requests/s on held connections for the client stack
# over AF_PACKET and AF_XDP, cicada with kernel sockets and wrk, each also
# per client core (rate / client CPU time). Root. SIDE_DURATION per figure
# (default 10s): about 8 x that in all.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
if [ "$(id -u)" != 0 ]; then
	echo "side.sh: needs root for the lab's namespaces" >&2
	exit 1
fi
make build >/dev/null
go build -o bin/sidebench ./bench/dataplane/side
timeout --kill-after=30s 10m bin/sidebench -d "${SIDE_DURATION:-10s}" -cicada bin/cicada "$@"
