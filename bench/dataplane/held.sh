#!/usr/bin/env bash
# Held connections (issue 11): one client stack and one server stack, each
# in its own process over AF_PACKET on the lab's veth, hold HELD_CONNS
# (default 10,000,000 = 200 client addresses x 50,000 ports), then the
# second round; then, in the same run, the kernel-socket cicada worker's
# figure from bench/scale at HELD_KERNEL_USERS (default 100,000) users.
#
# Root (namespaces). Bounded: the data plane part by HELD_TIMEOUT_S (default
# 900 s; the lab is removed on SIGTERM too), the kernel part by 6 min.
# Memory: about 1.4 GiB per side at 10,000,000 (128-byte records), 1.5 GiB for the kernel
# part.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
if [ "$(id -u)" != 0 ]; then
	echo "held.sh: needs root for the lab's namespaces" >&2
	exit 1
fi
conns="${HELD_CONNS:-10000000}"
ips="${HELD_IPS:-200}"
limit="${HELD_TIMEOUT_S:-900}"
kusers="${HELD_KERNEL_USERS:-100000}"
make build >/dev/null
go build -o bin/heldbench ./bench/dataplane/held
go build -o bin/scalebench ./bench/scale
echo "== $(date -u +%H:%M:%S) data plane: $conns connections ($ips addresses), load $(cut -d' ' -f1-3 /proc/loadavg)"
timeout --kill-after=30s "$((limit + 60))" bin/heldbench -conns "$conns" -ips "$ips" -timeout "${limit}s" || echo "heldbench: exit $?"
echo "== $(date -u +%H:%M:%S) kernel sockets: $kusers users (bench/scale), load $(cut -d' ' -f1-3 /proc/loadavg)"
bin/scalebench -bin bin/cicada -users "$kusers" -rate 1600 -timeout 6m
