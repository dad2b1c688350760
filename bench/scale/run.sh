#!/usr/bin/env bash
# Scale benchmark (issue 7): master + cicada workers + nginx on this machine
# hold SCALE_USERS idle keep-alive users (default 1,000,000; each worker and
# each nginx worker process stays under the 20,000 open-files limit), spawned
# at SCALE_RATE/s (default 1,600) from source addresses in 127.0.0.0/8, then a
# second round on the held connections. Then the same scenario at 15,000
# users, one cicada worker against one Locust FastHttpUser worker.
#
# Bounded: the driver stops itself after ramp time x 2 + 10 minutes and ends
# every process it started (also on Ctrl-C). Needs about 14 GiB of memory for
# 1,000,000 users (the kernel takes about 8-10 KB per loopback connection
# pair); it refuses to start if MemAvailable is lower.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/go/bin"
make build >/dev/null
go build -o bin/scalebench ./bench/scale
users="${SCALE_USERS:-1000000}"
rate="${SCALE_RATE:-1600}"
echo "== scale: $users users at $rate/s"
bin/scalebench -bin bin/cicada -users "$users" -rate "$rate"
echo "== 15,000 users: cicada vs Locust FastHttpUser"
bin/scalebench -bin bin/cicada -compare -users 15000 -rate "$rate" -locustfile bench/http/locust_idle.py
