# SPDX-License-Identifier: Apache-2.0
"""A program that never imports torch and ends with an uncaught exception: with the
shim it must run exactly as without."""
import collections
import gc
import json
import sys

gc.collect()
try:
    {}["missing"]
except KeyError as e:
    caught = repr(e)
print(json.dumps({"letters": sorted(collections.Counter("trainscope").items()),
                  "caught": caught, "torch": "torch" in sys.modules,
                  "args": sys.argv[1:]}), flush=True)
raise SystemError("the program's own failure")
