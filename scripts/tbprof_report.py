#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Report of `make profile` (scripts/profile.sh): instructions per DTO (or per I/O, when the
result line says unit=I/O) and kernel function.

Usage: scripts/tbprof_report.py RUN1 RUN2 [TOP]

Each RUN directory holds blocks.txt (the tbprof plugin's "<vaddr> <insns> <runs> <vcpu>"
lines), sync/kallsyms.txt and sync/result.txt (the run's result line). RUN2 did the same run
as RUN1 with more DTOs: the difference of their counts per function, over the difference of
their DTOs, is what a DTO costs, without boot and set-up. A block is charged to the symbol at
or below its first address; symbols are demangled with llvm-cxxfilt-19. TOP (45) functions per
table.

Then calls per DTO of the kernel's lock functions (LOCKS): a block that starts at a function's
own address is its entry, so its runs count the function's calls. The IRQ-off lock round trips
are the calls of _raw_spin_lock_irqsave, _raw_spin_lock_irq and _raw_spin_lock_irq_disable (Rust's
SpinLockIrq, which rkdapl's own locks are), from every caller (rxe's,
ib_core's, the scheduler's as much as rkdapl's; raw's run of the same op and size takes about
as many, so the difference does not isolate rkdapl's own). Atomic instructions are inline and
not counted.
"""
import bisect
import collections
import re
import subprocess
import sys

CLIENT_VCPU = 1
USER_END = 0xffff800000000000
# Functions whose calls per DTO the report counts; the first IRQ_LOCKS are the IRQ-off lock round
# trips.
IRQ_LOCKS = 3
LOCKS = ("_raw_spin_lock_irqsave", "_raw_spin_lock_irq", "_raw_spin_lock_irq_disable",
         "_raw_spin_lock_bh", "_raw_spin_lock",
         "_raw_spin_trylock", "_raw_read_lock_irqsave", "_raw_write_lock_irqsave")


def load(run):
    syms = []
    for line in open(run + "/sync/kallsyms.txt"):
        p = line.split()
        if len(p) < 3 or p[1] in "aAuU" or int(p[0], 16) == 0:
            continue
        syms.append((int(p[0], 16), p[2] + (" " + p[3] if len(p) > 3 else "")))
    syms.sort()
    addrs = [a for a, _ in syms]
    result = open(run + "/sync/result.txt").read().strip()
    iters = int(re.search(r"iters=(\d+)", result).group(1))
    client, every = collections.Counter(), collections.Counter()
    calls, calls_client = collections.Counter(), collections.Counter()
    for line in open(run + "/blocks.txt"):
        va, insns, runs, vcpu = line.split()
        va = int(va, 16)
        i = bisect.bisect_right(addrs, va) - 1
        name = "(user space)" if va < USER_END else syms[i][1] if i >= 0 else "?"
        n = int(insns) * int(runs)
        every[name] += n
        if int(vcpu) == CLIENT_VCPU:
            client[name] += n
        if va >= USER_END and i >= 0 and va == addrs[i]:
            calls[name] += int(runs)
            if int(vcpu) == CLIENT_VCPU:
                calls_client[name] += int(runs)
    return result, iters, client, every, calls, calls_client


def demangled(names):
    plain = [n.split(" [")[0] for n in names]
    try:
        out = subprocess.run(["llvm-cxxfilt-19"], input="\n".join(plain), capture_output=True,
                             text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        out = plain
    return {n: d + (" [" + n.split(" [", 1)[1] if " [" in n else "") for n, d in zip(names, out)}


def main():
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 45
    r1, n1, c1, e1, k1, kc1 = load(sys.argv[1])
    r2, n2, c2, e2, k2, kc2 = load(sys.argv[2])
    dtos = n2 - n1
    unit = re.search(r"unit=(\S+)", r2)
    unit = unit.group(1) if unit else "DTO"
    print("run 1: " + r1)
    print("run 2: " + r2)
    tables = []
    for title, a, b in (("client vCPU %d (post calls, waits)" % CLIENT_VCPU, c1, c2),
                        ("all vCPUs", e1, e2)):
        diff = collections.Counter({k: b[k] - a.get(k, 0) for k in b})
        tables.append((title, diff))
    names = demangled(sorted({k for _, d in tables for k, _ in d.most_common(top)}))
    for title, diff in tables:
        total = sum(v for v in diff.values())
        print("\n=== instructions per %s, %s: %.0f in all (run 2 minus run 1, %d %ss) ==="
              % (unit, title, total / dtos, dtos, unit))
        for k, v in diff.most_common(top):
            print("%9.1f  %s" % (v / dtos, names[k]))
    print("\n=== calls per %s of the kernel's lock functions (entries of the function's first"
          " block; every caller) ===" % unit)
    print("%9s %9s  %s" % ("all vCPUs", "client", "function"))
    irq = [0.0, 0.0]
    for fn in LOCKS:
        a = (k2.get(fn, 0) - k1.get(fn, 0)) / dtos
        c = (kc2.get(fn, 0) - kc1.get(fn, 0)) / dtos
        if fn in LOCKS[:IRQ_LOCKS]:
            irq = [irq[0] + a, irq[1] + c]
        print("%9.2f %9.2f  %s" % (a, c, fn))
    print("%9.2f %9.2f  IRQ-off lock round trips (_raw_spin_lock_irqsave + _irq + _irq_disable)"
          % tuple(irq))


if __name__ == "__main__":
    main()
