#!/usr/bin/python3
"""Compare msgpack payloads the way Locust reads them.

Reads JSON lines {"id": str, "a": hex, "b": hex} on stdin. Each payload is
decoded with msgpack.loads(raw=False, strict_map_key=False), Locust's unpacker
settings, and the two values are compared: ints and floats compare by value
(Python treats 2 and 2.0 alike), but bool, str, bytes, list and dict must match
in kind. Prints one JSON line {"id", "a", "b", "why"} per mismatch, then
"DONE <n>" with the number of pairs read. Exit status 0 unless the input is
unreadable.
"""
import json
import sys

import msgpack


def kind(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return type(v).__name__


def diff(a, b, path="$"):
    """Return a description of the first difference, or None."""
    if kind(a) != kind(b):
        return "%s: %s vs %s" % (path, kind(a), kind(b))
    if isinstance(a, dict):
        if set(a) != set(b):
            return "%s: keys %r vs %r" % (path, sorted(map(repr, a)), sorted(map(repr, b)))
        for k in a:
            # Look up b's own key object so 140 vs 140.0 keys are compared too.
            bk = next(x for x in b if x == k)
            if kind(k) != kind(bk):
                return "%s: key %r vs %r" % (path, k, bk)
            d = diff(a[k], b[bk], "%s[%r]" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: len %d vs %d" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    if a != b and not (a != a and b != b):  # NaN equals NaN here
        return "%s: %r vs %r" % (path, a, b)
    return None


def main():
    n = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        n += 1
        req = json.loads(line)
        try:
            a = msgpack.loads(bytes.fromhex(req["a"]), raw=False, strict_map_key=False)
            b = msgpack.loads(bytes.fromhex(req["b"]), raw=False, strict_map_key=False)
        except Exception as e:  # noqa: BLE001 - report any unpack failure
            print(json.dumps({"id": req["id"], "why": "unpack: %r" % (e,)}))
            continue
        why = diff(a, b)
        if why:
            print(json.dumps({"id": req["id"], "a": repr(a)[:2000], "b": repr(b)[:2000], "why": why}))
    print("DONE %d" % n)


if __name__ == "__main__":
    main()
