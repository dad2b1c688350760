#!/usr/bin/python3
"""A scriptable pyzmq peer for the interop tests of package zmtp.

Usage:
  zmqpeer.py router ENDPOINT [--echo]          bind a ROUTER (ENDPOINT may use port 0)
  zmqpeer.py dealer ENDPOINT IDENTITY [--echo] [--heartbeat MS] [--heartbeat-timeout MS]
                                                connect a DEALER ("-" = no identity)
  zmqpeer.py many ENDPOINT N                    N DEALERs at once, identities py-0..py-N-1:
                                                each sends hello-i and waits for one reply

router/dealer print "ready ENDPOINT" once bound/connecting, then one line
"msg F1 F2 ..." per received message (a ROUTER's first frame is the sender's
identity). Frames are printed as hex ("-" for empty), or as "#LEN:SHA256"
when longer than 4096 bytes. Commands on stdin, one per line:
  send F1 F2 ...   send a message; F is hex, "-" for empty, or "*N:HH" for
                   N copies of byte HH
  quit             close and exit (also on end of stdin)
--echo sends every received message back (a ROUTER to its sender).
--plain USER:PASS makes a DEALER a ZMTP PLAIN client with these credentials;
--plain-server USER:PASS makes a ROUTER a PLAIN server that accepts only
them (pyzmq's ThreadAuthenticator answers libzmq's ZAP requests).
"""
import argparse
import hashlib
import os
import sys
import time

import zmq


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def fmt(frames):
    parts = []
    for f in frames:
        b = bytes(f)
        if not b:
            parts.append("-")
        elif len(b) <= 4096:
            parts.append(b.hex())
        else:
            parts.append("#%d:%s" % (len(b), hashlib.sha256(b).hexdigest()))
    return " ".join(parts)


def parse(tok):
    if tok == "-":
        return b""
    if tok.startswith("*"):
        n, byte = tok[1:].split(":")
        return bytes.fromhex(byte) * int(n)
    return bytes.fromhex(tok)


def serve(sock, echo):
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    poller.register(0, zmq.POLLIN)
    pending = b""
    while True:
        for what, _ in poller.poll():
            if what is sock:
                while True:
                    try:
                        frames = sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    out("msg " + fmt(frames))
                    if echo:
                        sock.send_multipart(frames)
            else:
                data = os.read(0, 1 << 20)
                if not data:
                    return
                pending += data
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    words = line.decode().split()
                    if not words:
                        continue
                    if words[0] == "quit":
                        return
                    if words[0] == "send":
                        sock.send_multipart([parse(w) for w in words[1:]])


def many(ctx, endpoint, n):
    socks = []
    for i in range(n):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.IDENTITY, b"py-%d" % i)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(endpoint)
        socks.append(s)
    for i, s in enumerate(socks):
        s.send(b"hello-%d" % i)
    poller = zmq.Poller()
    for s in socks:
        poller.register(s, zmq.POLLIN)
    waiting = dict((s, i) for i, s in enumerate(socks))
    deadline = time.time() + 60
    while waiting and time.time() < deadline:
        for s, _ in poller.poll(1000):
            msg = s.recv()
            i = waiting.pop(s, None)
            if i is None or msg != b"welcome-%d" % i:
                out("fail %r got %r" % (i, msg))
                return 1
            poller.unregister(s)
    if waiting:
        out("fail %d sockets got no reply" % len(waiting))
        return 1
    out("ok %d" % n)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["router", "dealer", "many"])
    ap.add_argument("endpoint")
    ap.add_argument("arg", nargs="?")
    ap.add_argument("--echo", action="store_true")
    ap.add_argument("--heartbeat", type=int, default=0, help="ZMQ_HEARTBEAT_IVL in ms")
    ap.add_argument("--heartbeat-timeout", type=int, default=0, help="ZMQ_HEARTBEAT_TIMEOUT in ms")
    ap.add_argument("--plain", help="DEALER: PLAIN client credentials USER:PASS")
    ap.add_argument("--plain-server", help="ROUTER: PLAIN server accepting USER:PASS")
    a = ap.parse_args()
    ctx = zmq.Context()
    if a.mode == "many":
        rc = many(ctx, a.endpoint, int(a.arg))
        ctx.destroy(linger=0)
        return rc
    auth = None
    if a.mode == "router":
        sock = ctx.socket(zmq.ROUTER)
        if a.plain_server:
            from zmq.auth.thread import ThreadAuthenticator
            user, password = a.plain_server.split(":", 1)
            auth = ThreadAuthenticator(ctx)
            auth.start()
            auth.configure_plain(domain="*", passwords={user: password})
            sock.plain_server = True
        sock.bind(a.endpoint)
        ready = sock.getsockopt(zmq.LAST_ENDPOINT).decode()
    else:
        sock = ctx.socket(zmq.DEALER)
        if a.arg and a.arg != "-":
            sock.setsockopt(zmq.IDENTITY, a.arg.encode())
        if a.plain:
            user, password = a.plain.split(":", 1)
            sock.plain_username = user.encode()
            sock.plain_password = password.encode()
        if a.heartbeat:
            sock.setsockopt(zmq.HEARTBEAT_IVL, a.heartbeat)
            sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, a.heartbeat_timeout or 3 * a.heartbeat)
        sock.connect(a.endpoint)
        ready = a.endpoint
    sock.setsockopt(zmq.LINGER, 2000)
    out("ready " + ready)
    serve(sock, a.echo)
    sock.close()
    if auth is not None:
        auth.stop()
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
