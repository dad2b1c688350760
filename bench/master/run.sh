#!/usr/bin/env bash
# Master scalability: simulated workers (real ZeroMQ over loopback, all in one
# process) each send a heartbeat every second and a 20-name stats report every
# 3 s to a cicada master and to a Python Locust master (/usr/bin/locust
# --master --headless), one after the other; the master's CPU (utime+stime from
# /proc) is measured over a steady-state window. Bounded: TIMEOUT overall.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
# Locust is measured up to 3,500 workers (-locust-max), where its master is
# past half a core; cicada up to 19,000, under the 20,000 open files one
# process may have here (the simulating process holds as many).
WORKERS=${WORKERS:-100,500,1000,2000,3000,3500,4000,8000,12000,16000,19000}
WINDOW=${WINDOW:-20s}
TIMEOUT=${TIMEOUT:-2700}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/masterbench" ./bench/master
timeout "$TIMEOUT" "$bin/masterbench" -workers "$WORKERS" -window "$WINDOW"
