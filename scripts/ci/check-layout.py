#!/usr/bin/env python3
"""The module graph in docs/architecture.md (between <!-- module-graph --> markers) against Package.swift, as SwiftPM
reads it.

Checks every library and system module and the `cueline` executable (benchmarks and tests are left out): the same
modules, each with the same dependencies on the package's own modules. Exit 1 naming each difference."""
import json
import re
import subprocess
import sys

DOC = "docs/architecture.md"
text = open(DOC, encoding="utf-8").read()
block = re.search(r"<!-- module-graph -->(.*?)<!-- /module-graph -->", text, re.S)
if not block:
    sys.exit(f"{DOC}: no <!-- module-graph --> block")
documented = {}
for line in block.group(1).strip().splitlines():
    m = re.match(r"- `([^`]+)` → (.*)$", line.strip())
    if not m:
        sys.exit(f"{DOC} module graph: cannot read the line {line!r} (expected - `Module` → `A`, `B` or none)")
    deps = [] if m.group(2).strip() == "none" else re.findall(r"`([^`]+)`", m.group(2))
    documented[m.group(1)] = set(deps)

described = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"], check=True,
                                      capture_output=True, text=True).stdout)
actual = {}
for target in described["targets"]:
    if target["type"] in ("library", "system-target") and not target["path"].startswith("Tests") or target["name"] == "cueline":
        actual[target["name"]] = set(target.get("target_dependencies", []))

problems = []
for name in sorted(set(actual) | set(documented)):
    if name not in documented:
        problems.append(f"{name}: in Package.swift, missing from the module graph in {DOC}")
    elif name not in actual:
        problems.append(f"{name}: in the module graph in {DOC}, not a module of Package.swift")
    elif documented[name] != actual[name]:
        problems.append(f"{name}: {DOC} says {sorted(documented[name])}, Package.swift says {sorted(actual[name])}")
if problems:
    print(f"the module graph in {DOC} differs from Package.swift:\n  " + "\n  ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"the module graph in {DOC} matches Package.swift ({len(actual)} modules)")
