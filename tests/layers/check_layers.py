#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the include structure of src/ (docs/design.md, "Layers").

1. A folder includes only its own headers and those of lower layers.
2. No two modules include each other's headers (a module is a .c and its
   .h: src/sw/connector.c and src/sw/connector.h are one module; a header
   with no .c of its own is one module with the files that implement it,
   e.g. sw/connector_*.c), and the module graph has no cycle at all.
3. The pairs in SEPARATE do not include each other at all.
4. Inside the software provider (src/sw), the queues, memory and data
   path never include its connection management (SW_CM): connection
   management sits on top of the data path, as its own layer.

Usage: check_layers.py [SRC_DIR]. Prints every violation; exit 1 if any.
"""
import os
import re
import sys

# Lower number = lower layer. A folder may include its own headers and
# those of folders with a smaller number.
LAYERS = {
    "core": 0,  # helpers with no dependencies: lists, log, status, locks
    "iwarp": 1,  # pure wire formats (no I/O)
    "engine": 1,  # progress engine: epoll, timers, deferred work
    "oid": 1,  # machine-wide registry behind NdkQueryOid
    "front": 2,  # NDK front end: adapter, objects, endpoint table
    "sw": 3,  # software provider: queues, data path, connection management
    "verbs": 3,  # verbs provider (rdma-core): objects and rdma_cm
}

# Known violations still to remove, each with the work that removes it.
KNOWN = set()

# Modules that must not depend on each other in either direction, even
# without a cycle: the data path's receive and transmit sides share only
# its core (sw/dp_core), the connection manager reaches the data path
# through its public header alone, and the two providers share only the
# front end.
# The software provider's connection-management modules (the rest of
# src/sw is its queues, memory and data path).
SW_CM = ["sw/connector*", "sw/listener", "sw/backlog", "sw/mpa_io",
         "sw/sockopt", "sw/provider"]
SEPARATE = [
    ("sw/dp_rx", "sw/dp_tx"),
    ("sw/dp_tx", "sw/dp_rx"),
    ("sw/*", "verbs/*"),
    ("verbs/*", "sw/*"),
]
for _cm in ("sw/connector", "sw/listener", "sw/backlog", "sw/mpa_io",
            "sw/sockopt"):
    SEPARATE += [(_cm + "*", _dp) for _dp in ("sw/dp_rx", "sw/dp_tx",
                                              "sw/dp_core")]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules(src):
    deps = {}
    for folder in sorted(os.listdir(src)):
        path = os.path.join(src, folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if not name.endswith((".c", ".h")):
                continue
            mod = folder + "/" + name[:-2]
            stem = name[:-2].split("_")[0]
            if (name.endswith(".c") and stem != name[:-2]
                    and os.path.exists(os.path.join(path, stem + ".h"))
                    and not os.path.exists(os.path.join(path, stem + ".c"))):
                mod = folder + "/" + stem
            with open(os.path.join(path, name), encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                if not inc.endswith(".h") or "/" not in inc:
                    continue
                dep = inc[:-2]
                if dep != mod:
                    deps.setdefault(mod, set()).add(dep)
            deps.setdefault(mod, set())
    return deps


def find_cycle(deps):
    state = {}
    stack = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(deps.get(m, ())):
            if d not in deps:
                continue
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                cyc = visit(d)
                if cyc:
                    return cyc
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(deps):
        if m not in state:
            cyc = visit(m)
            if cyc:
                return cyc
    return None


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    deps = modules(src)
    bad = []
    for mod, ds in sorted(deps.items()):
        folder = mod.split("/")[0]
        if folder not in LAYERS:
            bad.append(f"{mod}: folder {folder}/ has no layer in this script")
            continue
        for d in sorted(ds):
            dfolder = d.split("/")[0]
            if dfolder == folder:
                continue
            if dfolder not in LAYERS:
                bad.append(f"{mod} includes {d}: unknown folder")
            elif LAYERS[dfolder] >= LAYERS[folder]:
                bad.append(f"{mod} ({folder}, layer {LAYERS[folder]}) "
                           f"includes {d} ({dfolder}, layer "
                           f"{LAYERS[dfolder]})")
    for mod, ds in sorted(deps.items()):
        for d in sorted(ds):
            if mod < d and mod in deps.get(d, ()):
                bad.append(f"{mod} and {d} include each other")
    def matches(pattern, mod):
        return mod == pattern or (pattern.endswith("*")
                                  and mod.startswith(pattern[:-1]))

    for a, b in SEPARATE:
        for mod, ds in sorted(deps.items()):
            if not matches(a, mod):
                continue
            for d in sorted(ds):
                if matches(b, d):
                    bad.append(f"{mod} includes {d}: kept apart")
    def sw_cm(mod):
        return any(mod == p or (p.endswith("*") and mod.startswith(p[:-1]))
                   for p in SW_CM)

    for mod, ds in sorted(deps.items()):
        if not mod.startswith("sw/") or sw_cm(mod):
            continue
        for d in sorted(ds):
            if sw_cm(d):
                bad.append(f"{mod} includes {d}: the software provider's "
                           "data path sits below its connection management")
    cyc = find_cycle(deps)
    if cyc:
        bad.append("include cycle: " + " -> ".join(cyc))
    known = [b for b in bad if b in KNOWN]
    bad = [b for b in bad if b not in KNOWN]
    for b in known:
        print("known: " + b)
    for b in bad:
        print(b)
    print(f"{len(deps)} modules, {len(bad)} violations, {len(known)} known")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
