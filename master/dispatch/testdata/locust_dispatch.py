#!/usr/bin/python3
"""Reference runner for master/dispatch tests.

Reads a JSON list of cases on stdin, drives Locust's own
locust.dispatch.UsersDispatcher (the installed version) through each case's
operations and prints, per case, the result of every "next" operation as
JSON on stdout. Sleeps are not taken: they are recorded (with a frozen
perf_counter, so each equals the full pacing interval).

Case: {"workers": [ids], "classes": [{"name", "weight", "fixed_count"}],
       "ops": [{"op": "dispatch", "target": n, "rate": r}
               | {"op": "next", "n": k}       (k < 0: until exhausted)
               | {"op": "add", "worker": id} | {"op": "remove", "worker": id}]}
Output per case: list of {"users": {worker: {class: n}}, "sleep": s} or
{"end": true, "sleep": s}.
"""
import json
import sys

import locust
import locust.dispatch as ld
from locust import User


class _Clock:
    @staticmethod
    def perf_counter():
        return 1000.0


class _Gevent:
    slept = 0.0

    @classmethod
    def sleep(cls, s):
        cls.slept += s


ld.time = _Clock
ld.gevent = _Gevent


class Hang(Exception):
    """Raised when 2.12.1's fixed-count loop spins forever (see below)."""


class _CountingCycle:
    # 2.12.1's fixed_count loop never ends when a fixed class is already full
    # when the counts are re-read (after a ramp down): it waits for every
    # fixed class to reach its count by an increment. Bound the work so such
    # cases are reported as {"hang": true} instead of hanging the test.
    budget = 0

    def __init__(self, it):
        self.it = _itertools.cycle(it)

    def __iter__(self):
        return self

    def __next__(self):
        _CountingCycle.budget -= 1
        if _CountingCycle.budget < 0:
            raise Hang()
        return next(self.it)


class _Itertools:
    cycle = _CountingCycle


_itertools = ld.itertools
ld.itertools = _Itertools


class Node:
    def __init__(self, id):
        self.id = id


def run(case):
    _CountingCycle.budget = 100_000
    try:
        return _run(case)
    except Hang:
        return {"hang": True}


def _run(case):
    classes = []
    for c in case["classes"]:
        attrs = {"weight": c.get("weight") or 1, "fixed_count": c.get("fixed_count", 0), "abstract": False}
        classes.append(type(c["name"], (User,), attrs))
    nodes = {w: Node(w) for w in case["workers"]}
    d = ld.UsersDispatcher(worker_nodes=list(nodes.values()), user_classes=classes)
    out = []
    for op in case["ops"]:
        kind = op["op"]
        if kind == "dispatch":
            d.new_dispatch(op["target"], op["rate"])
        elif kind == "add":
            nodes[op["worker"]] = Node(op["worker"])
            d.add_worker(nodes[op["worker"]])
        elif kind == "remove":
            d.remove_worker(nodes[op["worker"]])
        elif kind == "next":
            if d._dispatcher_generator is None:
                continue  # nothing dispatched yet
            n = op["n"]
            while n != 0:
                n -= 1
                _Gevent.slept = 0.0
                try:
                    users = next(d)
                except StopIteration:
                    out.append({"end": True, "sleep": _Gevent.slept})
                    break
                out.append({"users": users, "sleep": _Gevent.slept})
        else:
            raise ValueError(kind)
    return out


def main():
    cases = json.load(sys.stdin)
    json.dump({"version": locust.__version__, "results": [run(c) for c in cases]}, sys.stdout)


if __name__ == "__main__":
    main()
