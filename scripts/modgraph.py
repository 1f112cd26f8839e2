#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# Used by make check (selftests/run.sh) to keep the provider acyclic: exits 1 on a cycle.
"""Module import graph of rust/rkdapl: which top-level provider module uses which (crate:: paths).

abi/ is the module's boundary with C, a set of independent shims (one per DAT object, with
the C shapes they convert): each of its files is its own node, abi::<file>."""
import re, os, sys, itertools
root = sys.argv[1] if len(sys.argv) > 1 else 'rust/rkdapl'
mods = {}
for dp, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p = os.path.join(dp, f)
        rel = os.path.relpath(p, root)[:-3].replace('/mod', '')
        parts = rel.split('/')
        top = parts[0]
        if top == 'rkdapl': continue
        if top == 'abi' and len(parts) > 1: top = 'abi::' + parts[1]
        s = open(p).read()
        s = re.sub(r'//.*', '', s)
        deps = set()
        def node(path):
            p = [x.strip('{ \n') for x in path.split('::')]
            if p[0] == 'abi' and len(p) > 1 and re.fullmatch(r'[a-z_]+', p[1]): return 'abi::' + p[1]
            return p[0]
        for m in re.finditer(r'use crate::\{([^;]*)\};', s, re.S):
            for item in re.split(r',(?![^{]*\})', m.group(1)):
                item = item.strip()
                if not item: continue
                if item.startswith('abi::{'):
                    for sub in re.findall(r'([a-z_]+)', item[len('abi::{'):]): deps.add('abi' if sub == 'self' else 'abi::' + sub)
                else: deps.add(node(item))
        for m in re.finditer(r'crate::([a-z_]+(?:::[a-z_]+)?)', s):
            deps.add(node(m.group(1)))
        deps.discard(top); deps.discard('')
        mods.setdefault(top, set()).update(deps)
for m in sorted(mods): print(f"{m:10} -> {' '.join(sorted(mods[m]))}")
# cycles: strongly connected components (Tarjan)
idx, low, st, on, sccs, c = {}, {}, [], set(), [], [0]
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in mods.get(v, ()):
        if w not in mods: continue
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: sccs.append(sorted(comp))
for v in sorted(mods):
    if v not in idx: sc(v)
print("cycles:", sccs if sccs else "none")
sys.exit(1 if sccs else 0)
