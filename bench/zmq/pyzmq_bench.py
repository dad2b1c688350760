#!/usr/bin/python3
"""pyzmq half of bench/zmq: the same roles as the Go program.

  pyzmq_bench.py router ENDPOINT COUNT SIZE TIMEOUT   prints "ready EP", then "result N SECONDS"
  pyzmq_bench.py dealer ENDPOINT COUNT SIZE TIMEOUT   sends COUNT frames of SIZE bytes

Sockets are used as Locust does: send()/recv_multipart() with default
(copying) options and default high-water marks.
"""
import sys
import time

import zmq


def router(endpoint, count, timeout):
    ctx = zmq.Context()
    s = ctx.socket(zmq.ROUTER)
    s.setsockopt(zmq.RCVTIMEO, 500)
    s.setsockopt(zmq.LINGER, 0)
    s.bind(endpoint.replace(":0", ":*") if endpoint.endswith(":0") else endpoint)
    print("ready " + s.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)
    deadline = time.time() + timeout
    n = 0
    start = 0.0
    while n < count and time.time() < deadline:
        try:
            s.recv_multipart()
        except zmq.Again:
            continue
        if n == 0:
            start = time.perf_counter()
        n += 1
    el = time.perf_counter() - start if n else 0.0
    print("result %d %.6f" % (n, el), flush=True)
    s.close()
    ctx.term()


def dealer(endpoint, count, size, timeout):
    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.IDENTITY, b"bench-dealer")
    s.setsockopt(zmq.LINGER, int(timeout * 1000))
    s.connect(endpoint)
    payload = b"\0" * size
    deadline = time.time() + timeout
    for i in range(count):
        s.send(payload)
        if i % 1000 == 0 and time.time() > deadline:
            break
    s.close()
    ctx.term()


def main():
    role, endpoint, count, size, timeout = sys.argv[1:6]
    if role == "router":
        router(endpoint, int(count), float(timeout))
    else:
        dealer(endpoint, int(count), int(size), float(timeout))


if __name__ == "__main__":
    main()
