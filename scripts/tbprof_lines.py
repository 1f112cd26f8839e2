#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""`make profile`'s line report (RKDAPL_PROF_LINES=1): instructions per DTO (or I/O) and
source line of one module, from the same two runs as scripts/tbprof_report.py.

Usage: scripts/tbprof_lines.py RUN1 RUN2 MODULE.ko [MODNAME] [TOP]

The module must carry line tables (profile.sh builds rkdapl.ko with
-Cdebuginfo=line-tables-only then: the same code, with a .debug_line section). Each block the
tbprof plugin counted is a run of instructions from its first address; every instruction of
it is charged the block's runs, and the instructions are then summed per source line with
llvm-symbolizer-19. Code inlined from core, alloc or the kernel crate's sync types is charged
to the innermost line of rkdapl or the RDMA layer that inlined it (a `KVec::push` to the line
that pushed), which is what one would change; the first table sums the lines per file.
"""
import bisect
import collections
import re
import subprocess
import sys

LIBRARY = ("rust/library/", "rust/kernel/alloc", "rust/kernel/sync/")


def text_insns(ko):
    """Every instruction address of the module's .text, in order."""
    out = subprocess.run(["llvm-objdump-19", "-d", "--no-show-raw-insn", "--section=.text", ko],
                         capture_output=True, text=True, check=True).stdout
    return sorted(int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):\s", out, re.M))


def ko_symbols(ko):
    out = subprocess.run(["llvm-nm-19", "--defined-only", ko], capture_output=True, text=True,
                         check=True).stdout
    return {p[2]: int(p[0], 16) for p in (l.split() for l in out.splitlines())
            if len(p) == 3 and p[1] in "tT"}


def counts(run, mod, kofs, insns):
    """Runs per instruction (module file address) of RUN, and the run's iterations."""
    # Every text symbol of the kernel and all modules, so that a block is charged only to the
    # symbol it lies in: the module's last function is followed by its static-call
    # trampolines and then by the next module's code, which must not count as the module's.
    syms = {}
    for line in open(run + "/sync/kallsyms.txt"):
        p = line.split()
        if len(p) >= 3 and p[1] in "tT":
            own = len(p) >= 4 and p[3] == "[" + mod + "]"
            syms[int(p[0], 16)] = p[2] if own else None
    addrs = sorted(syms)
    iters = int(re.search(r"iters=(\d+)", open(run + "/sync/result.txt").read()).group(1))
    cnt = collections.Counter()
    for line in open(run + "/blocks.txt"):
        va, n, runs, _ = line.split()
        va, n, runs = int(va, 16), int(n), int(runs)
        i = bisect.bisect_right(addrs, va) - 1
        if i < 0 or va - addrs[i] > 0x10000 or syms[addrs[i]] not in kofs:
            continue
        fa = kofs[syms[addrs[i]]] + va - addrs[i]
        j = bisect.bisect_left(insns, fa)
        for k in range(j, min(j + n, len(insns))):
            cnt[insns[k]] += runs
    return cnt, iters


def main():
    run1, run2, ko = sys.argv[1:4]
    mod = sys.argv[4] if len(sys.argv) > 4 else "rkdapl"
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 40
    kofs, insns = ko_symbols(ko), text_insns(ko)
    c1, n1 = counts(run1, mod, kofs, insns)
    c2, n2 = counts(run2, mod, kofs, insns)
    per = {a: (c2[a] - c1.get(a, 0)) / (n2 - n1) for a in c2}
    addrs = sorted(a for a, v in per.items() if v > 0.5)
    out = subprocess.run(["llvm-symbolizer-19", "--obj=" + ko, "--inlining", "--functions=none"],
                         input="\n".join(hex(a) for a in addrs), capture_output=True, text=True,
                         check=True).stdout
    lines, files = collections.Counter(), collections.Counter()
    for a, group in zip(addrs, out.strip("\n").split("\n\n")):
        frames = [re.sub(r".*?/(rust/|samples/)", r"\1", f.rsplit(":", 1)[0])
                  for f in group.splitlines() if f.strip()]
        frames = [f.replace("rkdapl/../", "") for f in frames]
        if not frames:
            continue
        own = next((f for f in frames if not f.startswith(LIBRARY)),
                   "(out-of-line library code: drop glue, allocation):0")
        lines[own] += per[a]
        files[own.rsplit(":", 1)[0]] += per[a]
    unit = "I/O" if "unit=I/O" in open(run2 + "/sync/result.txt").read() else "DTO"
    print(f"=== {mod}: instructions per {unit} and source file, all vCPUs "
          f"({round(sum(files.values()))} in all) ===")
    for f, v in files.most_common(top // 2):
        print(f"{v:9.1f}  {f}")
    print(f"=== {mod}: instructions per {unit} and source line (inlined library code charged "
          f"to the line that inlined it) ===")
    for l, v in lines.most_common(top):
        print(f"{v:9.1f}  {l}")


if __name__ == "__main__":
    main()
