#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks reports against the SlowNodeReport CRD: every field a report's status holds is
declared in the schema (the API server would prune an undeclared one, and kubectl would
never show it), with a type the schema allows, and every declared field has a
description (for kubectl explain).

usage: check_crd.py CRD.yaml REPORT.json...   exit 1 and a line per finding on failure."""
import json
import sys

import yaml

TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
         "object": dict, "array": list}


def undescribed(schema, path, out):
    for name, sub in schema.get("properties", {}).items():
        where = path + "." + name
        if "description" not in sub and name != "metadata":
            out.append("%s: no description" % where)
        undescribed(sub, where, out)
    if "items" in schema:
        undescribed(schema["items"], path + "[]", out)


def undeclared(value, schema, path, out):
    if value is None:
        if not schema.get("nullable"):
            out.append("%s: null, and the schema does not allow it" % path)
        return
    want = TYPES.get(schema.get("type"))
    if want and (not isinstance(value, want) or (want is int and isinstance(value, bool))):
        out.append("%s: %s, the schema says %s" % (path, type(value).__name__, schema["type"]))
        return
    if "enum" in schema and value not in schema["enum"]:
        out.append("%s: %r is not one of %s" % (path, value, schema["enum"]))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k, v in value.items():
            if k not in props:
                out.append("%s.%s: not in the schema (the API server prunes it)" % (path, k))
            else:
                undeclared(v, props[k], path + "." + k, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            undeclared(v, schema.get("items", {}), "%s[%d]" % (path, i), out)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    crd = yaml.safe_load(open(sys.argv[1]))
    version = crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    found = []
    undescribed(schema, "", found)
    for col in version.get("additionalPrinterColumns", []):
        if col["name"] != "Age" and "description" not in col:
            found.append("printer column %s: no description" % col["name"])
    for path in sys.argv[2:]:
        report = json.load(open(path))
        undeclared(report.get("status", {}), schema["properties"]["status"],
                   path + ": .status", found)
    for f in found:
        print(f)
    print("%d report(s) checked against %s: %s" % (len(sys.argv) - 2, sys.argv[1],
                                                   "%d finding(s)" % len(found) if found else "ok"))
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
