#!/usr/bin/python3
"""Prints Python's repr() of floats and strings, for FormatPyFloat and
PythonRepr. Input (stdin): {"floats": [hex bit patterns], "strings": [...]};
output (stdout): {"floats": [repr...], "strings": [repr...], "readable":
[Locust's get_readable_percentiles of the floats in "percentiles"]}."""
import json
import struct
import sys

from locust.stats import get_readable_percentiles

data = json.load(sys.stdin)
floats = [struct.unpack(">d", bytes.fromhex(h))[0] for h in data["floats"]]
out = {
    "floats": [repr(f) for f in floats],
    "strings": [repr(s) for s in data["strings"]],
    "readable": get_readable_percentiles([float(p) for p in data["percentiles"]]),
    "fixed2": ["%.2f" % f for f in floats],
    "fixed6": ["{:2f}".format(f) for f in floats],
}
json.dump(out, sys.stdout, ensure_ascii=False, indent=0)
