#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The report of the deterministic `make bench` (qemu/bench-det.sh): results.csv, plot.png and
the tables, with every target of the benchmark marked met or MISSED.

    scripts/bench_det_report.py out/bench-<ts> [--baseline FILE] [--save-baseline FILE]
    scripts/bench_det_report.py --plot results.csv plot.png   (only the plot, from a CSV)

The guest ran under QEMU's -icount shift=0,sleep=off: one guest instruction is one virtual
nanosecond, idle time is skipped, and the guest's clock counts the instructions all its vCPUs
executed. So:

- MBps and Mmsgps are virtual-time rates (bytes or DTOs per instruction, scaled);
- post_instr is the post call's instructions: the median timed bracket around
  rkdapl_post_*() or ib_post_send() (interrupts off) minus the median empty bracket;
- dto_instr (lat runs) is the instructions per DTO end to end with one DTO in flight (the
  run's instructions over its DTOs): post, rxe's requester/responder/completer work, the
  completion and the event delivered to the sleeping consumer (its wake-up included). Not the
  median DTO: single DTOs take one of a few paths (which CPU a wake-up lands on), so the
  median jumps between them, the mean does not;
- bw_dto_instr (bw runs) is the run's instructions per DTO, txdepth DTOs in flight (perftest:
  1 / its message rate);
- rkdapl is the C consumer (samples/rkdapl_perf), rust the same client on rkdapl's Rust API
  (tool rkdapl-rust, samples/rust/rkdapl_rust_perf.rs, against rkdapl_perf's server), raw the
  same work on ib_core and rdma_cm (samples/raw_perf);
- -CRC (sizes >= 4 KiB): rxe computes the ICRC (crc32_le) of every packet on the sender and
  checks it on the receiver, both in this guest: 2 x size x the ceiling run's crc32
  instructions per byte (1000 / crc32_MBps) per DTO (packet headers left out: < 2% of a 4 KiB
  packet). "rk/raw -CRC" is the bandwidth ratio with those instructions taken out of both
  tools' instructions per DTO (bw runs): (raw - crc) / (rkdapl - crc), the provider's share
  that the CRC hides;
- baseline (docs/bench/baseline.csv, or the file given with --baseline): every figure of this
  run against the committed medians; a figure more than 1% worse (instructions higher,
  MBps or Mmsgps lower) is marked REGRESSED. --save-baseline FILE writes this run's medians
  as a new baseline.

Every figure is measured in each pass (column rep); the tables give the median over the
passes, and the repeatability table max/min over the passes for each figure.
"""
import argparse
import csv
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_report import FIELDS, kernel_rows, num, perftest_rows  # noqa: E402

OPS = ("write", "read", "send")
RUST = "rkdapl-rust"
# The tools of the main tables; a tool name with "-" is a variant (rkdapl-batch8) except these.
MAIN_TOOLS = ("rkdapl", RUST, "raw", "perftest")
TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(TOP, "docs", "bench", "baseline.csv")
# Figures where a higher value is worse (instructions); for the others (rates) lower is worse.
HIGHER_WORSE = ("bw_dto_instr", "dto_instr", "post_instr")
REGRESSION = 0.01
# Bandwidth targets, rkdapl / raw verbs (the targets table and the plot): at 64 B (C and Rust),
# and at every larger size (C).
BW_TARGET_64 = 0.97
BW_TARGET = 0.95
# Instructions per DTO end to end at 64 B (lat runs), rkdapl / raw verbs, at most.
LAT_TARGET_64 = 1.03
# (figure, column or function of a row, kinds it applies to)
FIGURES = {
    "MBps": lambda r: num(r["MBps"]) if r["kind"] == "bw" else None,
    # from dto_ns where there is one: the tools print Mmsgps with 6 decimals, too coarse at
    # large sizes to compare passes
    "Mmsgps": lambda r: (1000 / num(r["dto_ns"]) if num(r["dto_ns"]) else num(r["Mmsgps"]))
    if r["kind"] == "bw" else None,
    "bw_dto_instr": lambda r: num(r["dto_ns"]) if r["kind"] == "bw" else None,
    "dto_instr": lambda r: num(r["dto_ns"]) if r["kind"] == "lat" else None,
    "post_instr": lambda r: num(r["post_ns"]) - num(r["empty_ns"])
    if num(r["post_ns"]) is not None and num(r["empty_ns"]) is not None else None,
}


def collect(rows):
    """(tool, op, kind, size) -> figure -> [values over the passes]."""
    out = {}
    for r in rows:
        key = (r["tool"], r["op"], r["kind"], int(r["size"]))
        for fig, f in FIGURES.items():
            v = f(r)
            if v is not None:
                out.setdefault(key, {}).setdefault(fig, []).append(v)
    return out


def med(data, tool, op, kind, size, fig):
    vals = data.get((tool, op, kind, size), {}).get(fig)
    return statistics.median(vals) if vals else None


def spread(vals):
    """max/min of the passes' values (1.0: identical)."""
    vals = [v for v in vals if v is not None]
    if len(vals) < 2 or min(vals) <= 0:
        return None
    return max(vals) / min(vals)


def f(x, d=2):
    return "-" if x is None else f"{x:.{d}f}"


def ratio(a, b):
    return a / b if a is not None and b else None


class Targets:
    def __init__(self):
        self.lines = []

    def add(self, what, value, want, high, d=3):
        """A target: met, or MISSED and by how much (absolute and relative)."""
        if value is None:
            self.lines.append(f"    {what:72}        -  (not measured)")
            return
        ok = value >= want if high else value <= want
        miss = "" if ok else (f"; MISSED by {abs(value - want):.{d}f} "
                              f"({abs(value / want - 1) * 100:.1f}%)")
        self.lines.append(f"    {what:72} {value:8.{d}f}  {'met' if ok else 'MISSED'} "
                          f"(target {'>=' if high else '<='} {want}{miss})")

    def note(self, text):
        self.lines.append(f"    {text}")

    def show(self):
        print("\n".join(self.lines))


def crc_per_dto(ceiling, size):
    """rxe's ICRC instructions per DTO of size bytes (sender and receiver), from the ceiling
    run's crc32 rate; None below 4 KiB or without a ceiling run."""
    if size < 4096 or not ceiling or not ceiling.get("crc32_MBps"):
        return None
    return 2 * size * 1000 / ceiling["crc32_MBps"]


def minus(a, b):
    return a - b if a is not None and b is not None else None


def read_ceiling(sync):
    cpath = os.path.join(sync, "ceiling.txt")
    if not os.path.exists(cpath):
        return None
    kv = dict(re.findall(r"(\w+)=(\S+)", open(cpath).read()))
    return {k: num(v) if k.endswith("MBps") else v for k, v in kv.items()}


def baseline_rows(data):
    """This run's medians as baseline rows (the rkdapl-base A/B runs left out)."""
    out = []
    for (tool, op, kind, size), figs in sorted(data.items()):
        if tool.startswith("rkdapl-base"):
            continue
        for fig, vals in sorted(figs.items()):
            out.append({"tool": tool, "op": op, "kind": kind, "size": size, "figure": fig,
                        "value": f"{statistics.median(vals):.8g}"})
    return out


def short(v):
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) >= 1 else f"{v:.4g}"


def compare_baseline(data, path):
    """Prints every figure of this run against the baseline's; returns how many regressed."""
    print()
    if not os.path.exists(path):
        print(f"=== baseline: no {path} (see docs/benchmarks.md to make one) ===")
        return 0
    base = {}
    for r in csv.DictReader(open(path)):
        base[(r["tool"], r["op"], r["kind"], int(r["size"]), r["figure"])] = float(r["value"])
    keys = sorted({k[:4] for k in base})
    nfig = nreg = nbetter = 0
    lines = []
    for key in keys:
        cells, bad = [], []
        for fig in FIGURES:
            b = base.get(key + (fig,))
            now = med(data, *key, fig)
            if b is None or now is None or b == 0:
                continue
            nfig += 1
            change = now / b - 1
            worse = change if fig in HIGHER_WORSE else -change
            if worse > REGRESSION:
                nreg += 1
                bad.append(fig)
            elif worse < -REGRESSION:
                nbetter += 1
            cells.append(f"{fig} {short(now)} ({change * 100:+.1f}%)")
        if cells:
            mark = "REGRESSED" if bad else ""
            lines.append(f"    {mark:9} {' '.join(map(str, key)):28} {'; '.join(cells)}"
                         + (f"  [worse: {', '.join(bad)}]" if bad else ""))
    print(f"=== baseline {os.path.relpath(path, TOP) if path.startswith(TOP) else path}: "
          f"{nfig} figures compared, {nreg} REGRESSED (worse by more than "
          f"{REGRESSION * 100:.0f}%), {nbetter} better by more than {REGRESSION * 100:.0f}% "
          f"(change against the baseline's median) ===")
    print("    64 B figures move up to 4% from boot to boot (qemu/bench-det.sh): confirm a "
          "REGRESSED one with an A/B in one boot (RKDAPL_BENCH_BASELINE)")
    missing = sorted({k[:4] for k in base} - set(data))
    print("\n".join(lines))
    if missing:
        print(f"    not measured in this run: {len(missing)} of the baseline's runs, e.g. "
              + ", ".join(" ".join(map(str, k)) for k in missing[:4]))
    new = sorted(k for k in set(data) - {k[:4] for k in base} if not k[0].startswith("rkdapl-base"))
    if new:
        print(f"    not in the baseline: {len(new)} runs of this one, e.g. "
              + ", ".join(" ".join(map(str, k)) for k in new[:4]))
    return nreg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--baseline", default=os.environ.get("RKDAPL_BENCH_BASELINE_CSV", BASELINE))
    ap.add_argument("--save-baseline", metavar="FILE")
    ap.add_argument("--plot", nargs=2, metavar=("CSV", "PNG"),
                    help="only draw the plot of a results.csv")
    args = ap.parse_args()
    if args.plot:
        return replot(*args.plot)
    if not args.out:
        ap.error("the run directory is required")
    out = args.out
    sync = os.path.join(out, "sync")
    krows, kfails = kernel_rows(os.path.join(sync, "kresults.txt"), base_mode="event")
    prows, pfails = perftest_rows(sync)
    # pass 0 is the warm-up; "trace" rows are the traced runs
    rows = [r for r in krows + prows if r["rep"].isdigit() and r["rep"] != "0"]
    with open(os.path.join(out, "results.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    data = collect(rows)
    nrep = max((int(r["rep"]) for r in rows), default=0)
    sizes = sorted({k[3] for k in data if k[0] in ("rkdapl", "raw")})
    ceiling = read_ceiling(sync)
    print(f"=== rkdapl deterministic bench (release kernel, one guest, QEMU -icount shift=0,"
          f"sleep=off, rxe loopback): {len(rows)} results over {nrep} passes, "
          f"{len(kfails) + len(pfails)} failed runs; results.csv beside this report ===")
    print("    virtual time: 1 ns = 1 guest instruction (all vCPUs); medians over the passes;")
    print("    rk: rkdapl_perf (C API), rust: rkdapl_rust_perf (Rust API), raw: raw_perf "
          "(ib_core),")
    print("    pt: perftest. -CRC (>= 4 KiB): rxe's ICRC instructions (sender + receiver: 2 x size"
          " x crc32 instructions per byte of the ceiling run) taken out of both sides")
    for line in kfails + pfails:
        print("    " + line)

    # --- bandwidth ----------------------------------------------------------------------
    print()
    print("=== bandwidth, virtual time (MB/s = 10^6 bytes per 10^9 instructions) and ratios ===")
    print(f"{'op':6} {'size':>8} {'rk':>10} {'rust':>10} {'raw':>10} {'pt':>10} "
          f"{'rk/raw':>7} {'rust/raw':>8} {'rk/raw -CRC':>11} {'rust -CRC':>9} {'rk/pt':>6} "
          f"{'Mmsg/s rk':>10} {'rust':>9} {'raw':>9}")
    for op in OPS:
        for size in sizes:
            a, r, b, c = (med(data, t, op, "bw", size, "MBps")
                          for t in ("rkdapl", RUST, "raw", "perftest"))
            ma, mr, mb = (med(data, t, op, "bw", size, "Mmsgps") for t in ("rkdapl", RUST, "raw"))
            ia, ir, ib = (med(data, t, op, "bw", size, "bw_dto_instr")
                          for t in ("rkdapl", RUST, "raw"))
            crc = crc_per_dto(ceiling, size)
            xa = ratio(minus(ib, crc), minus(ia, crc)) if crc else None
            xr = ratio(minus(ib, crc), minus(ir, crc)) if crc else None
            print(f"{op:6} {size:>8} {f(a):>10} {f(r):>10} {f(b):>10} {f(c):>10} "
                  f"{f(ratio(a, b), 3):>7} {f(ratio(r, b), 3):>8} {f(xa, 3):>11} {f(xr, 3):>9} "
                  f"{f(ratio(a, c), 3):>6} {f(ma, 4):>10} {f(mr, 4):>9} {f(mb, 4):>9}")

    # --- instructions ---------------------------------------------------------------------
    print()
    print("=== instructions per DTO end to end (lat runs: one in flight, post to event delivered;"
          " bw runs: txdepth in flight) and per post call ===")
    print(f"{'op':6} {'size':>8} {'lat rk':>8} {'rust':>8} {'raw':>8} {'rk/raw':>6} "
          f"{'bw rk':>8} {'rust':>8} {'raw':>8} {'pt':>8} {'crc':>7} {'rk/raw -CRC':>11} "
          f"{'post rk':>7} {'rust':>5} {'raw':>5}")
    for op in OPS:
        for size in sizes:
            da, dr, db = (med(data, t, op, "lat", size, "dto_instr")
                          for t in ("rkdapl", RUST, "raw"))
            ba, br, bb, bc = (med(data, t, op, "bw", size, "bw_dto_instr")
                              for t in ("rkdapl", RUST, "raw", "perftest"))
            pa, pr, pb = (med(data, t, op, "bw", size, "post_instr")
                          for t in ("rkdapl", RUST, "raw"))
            crc = crc_per_dto(ceiling, size)
            x = ratio(minus(ba, crc), minus(bb, crc)) if crc else None
            print(f"{op:6} {size:>8} {f(da, 0):>8} {f(dr, 0):>8} {f(db, 0):>8} "
                  f"{f(ratio(da, db)):>6} {f(ba, 0):>8} {f(br, 0):>8} {f(bb, 0):>8} "
                  f"{f(bc, 0):>8} {f(crc, 0):>7} {f(x, 3):>11} {f(pa, 0):>7} {f(pr, 0):>5} "
                  f"{f(pb, 0):>5}")

    # --- fast paths and the READ-gap test ---------------------------------------------------
    variants = sorted({k for k in data if "-" in k[0] and k[0] not in MAIN_TOOLS})
    if variants:
        print()
        print("=== variants against the same tool's plain run (bw: MBps and instructions per DTO;"
              " ratio > 1 is better for MBps; rkdapl-base: the baseline's modules, same boot,"
              " against this tree's) ===")
        print(f"{'variant':22} {'op':6} {'size':>8} {'MBps':>9} {'plain':>9} {'ratio':>6} "
              f"{'instr/DTO':>10} {'plain':>9} {'post':>6} {'plain':>6}")
        for (tool, op, kind, size) in sorted(variants, key=lambda k: (k[0], k[1], k[3])):
            # the longest shorter name measured: rkdapl-base-batch8 against rkdapl-base
            parts = tool.split("-")
            base = next(("-".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)
                         if ("-".join(parts[:i]), op, kind, size) in data), parts[0])
            a, b = med(data, tool, op, kind, size, "MBps"), med(data, base, op, kind, size, "MBps")
            ia = med(data, tool, op, kind, size, "bw_dto_instr")
            ib = med(data, base, op, kind, size, "bw_dto_instr")
            pa = med(data, tool, op, kind, size, "post_instr")
            pb = med(data, base, op, kind, size, "post_instr")
            print(f"{tool:22} {op:6} {size:>8} {f(a):>9} {f(b):>9} {f(ratio(a, b), 3):>6} "
                  f"{f(ia, 0):>10} {f(ib, 0):>9} {f(pa, 0):>6} {f(pb, 0):>6}")

    traces(sync)

    # --- ceiling ------------------------------------------------------------------------
    both = ceiling.get("both_MBps") if ceiling else None
    if ceiling:
        print()
        print(f"=== rxe ceiling (same guest, virtual time, {ceiling.get('size')}-byte buffer): "
              f"crc32 {f(ceiling.get('crc32_MBps'))} MB/s ("
              f"{f(1000 / ceiling['crc32_MBps'] if ceiling.get('crc32_MBps') else None, 3)} "
              f"instructions per byte), memcpy {f(ceiling.get('memcpy_MBps'))} MB/s, one crc32 + "
              f"one copy per byte {f(both)} MB/s ===")

    # --- repeatability ------------------------------------------------------------------
    worst, over = [], []
    for key, figs in data.items():
        for fig, vals in figs.items():
            s = spread(vals)
            if s is not None:
                worst.append((s, key, fig))
                if s > 1.01:
                    over.append((s, key, fig, vals))
    worst.sort(reverse=True)
    print()
    print(f"=== repeatability: max/min over the {nrep} passes, per figure ===")
    if worst:
        allv = [w[0] for w in worst]
        print(f"    {len(worst)} figures; median {statistics.median(allv):.4f}, worst "
              f"{worst[0][0]:.4f} ({' '.join(map(str, worst[0][1]))} {worst[0][2]}); "
              f"{len(over)} above 1.01")
        for s, key, fig, vals in sorted(over, reverse=True)[:15]:
            print(f"    {s:.4f} {' '.join(map(str, key)):32} {fig:13} "
                  + " ".join(f"{v:.4g}" for v in vals))

    # --- baseline -----------------------------------------------------------------------
    compare_baseline(data, args.baseline)
    if args.save_baseline:
        with open(args.save_baseline, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=["tool", "op", "kind", "size", "figure", "value"])
            w.writeheader()
            w.writerows(baseline_rows(data))
        print(f"    wrote this run's medians to {args.save_baseline}")

    targets(data, sizes, both, worst)

    try:
        plot(data, sizes, os.path.join(out, "plot.png"), nrep)
        print("plot: plot.png beside this report")
    except ImportError as e:
        print(f"no plot: {e} (make deps installs python3-matplotlib)")
    # perftest's runs may hang spinning under -icount (qemu/bench-det.sh): listed above, they
    # do not fail the benchmark; a failed kernel-tool run does. Missed targets and REGRESSED
    # figures are reported, not failures.
    return 1 if not rows or kfails else 0


def targets(data, sizes, ceiling_both, worst):
    """The data path's targets, each met or MISSED (by how much)."""
    t = Targets()
    m = lambda tool, op, kind, size, fig: med(data, tool, op, kind, size, fig)  # noqa: E731
    for tool, label in (("rkdapl", "C"), (RUST, "Rust")):
        for op in OPS:
            t.add(f"bandwidth at 64 B, {op.upper()}, {label} rkdapl / raw",
                  ratio(m(tool, op, "bw", 64, "MBps"), m("raw", op, "bw", 64, "MBps")), BW_TARGET_64,
                  True)
    for tool, label in (("rkdapl", "C"), (RUST, "Rust")):
        for op in OPS:
            t.add(f"instructions per DTO end to end at 64 B (lat), {op.upper()}, {label} / raw",
                  ratio(m(tool, op, "lat", 64, "dto_instr"), m("raw", op, "lat", 64, "dto_instr")),
                  LAT_TARGET_64, False)
    t.add("post call at 64 B WRITE, C (rkdapl_post_rdma_write), instructions",
          m("rkdapl", "write", "bw", 64, "post_instr"), 450, False, 0)
    t.add("post call at 64 B WRITE, Rust (Ep::post of one DTO), instructions",
          m(RUST, "write", "bw", 64, "post_instr"), 380, False, 0)
    # What the provider adds per DTO besides its post call, at 64 B WRITE with txdepth in
    # flight: the run's instructions per DTO over raw's, minus the post calls' difference.
    rawb = m("raw", "write", "bw", 64, "bw_dto_instr")
    rawp = m("raw", "write", "bw", 64, "post_instr")
    for tool, label, want in (("rkdapl", "C", 250), (RUST, "Rust", 150)):
        b, p = m(tool, "write", "bw", 64, "bw_dto_instr"), m(tool, "write", "bw", 64, "post_instr")
        t.add(f"provider instructions per completion, {label} (64 B WRITE bw)", minus(minus(b, rawb), minus(p, rawp)), want, False, 0)
    for tool, label in (("rkdapl", "C"), (RUST, "Rust"), ("raw", "raw (reference)")):
        t.add(f"batch=8 saving per DTO against single posts, 64 B WRITE bw, {label}",
              minus(m(tool, "write", "bw", 64, "bw_dto_instr"),
                    m(tool + "-batch8", "write", "bw", 64, "bw_dto_instr")),
              200, True, 0)
    t.note("IRQ-off lock round trips (C <= 1, Rust 0) and atomics (C <= 2, Rust <= 1) per DTO: "
           "not measured by make bench;")
    t.note("  make profile's report counts calls of _raw_spin_lock_irqsave/_irq/_irq_disable per DTO from "
           "every caller (rxe's, ib_core's,")
    t.note("  the consumer's), not rkdapl's own; atomics are inline instructions it cannot count")
    for op in OPS:
        for size in sizes:
            if size == 64:
                continue
            t.add(f"bandwidth {op.upper()} {size} B, rkdapl / raw",
                  ratio(m("rkdapl", op, "bw", size, "MBps"), m("raw", op, "bw", size, "MBps")),
                  BW_TARGET, True)
    t.add("WRITE bandwidth at 64 KiB, rkdapl / ib_write_bw",
          ratio(m("rkdapl", "write", "bw", 65536, "MBps"),
                m("perftest", "write", "bw", 65536, "MBps")), 1.0, True)
    t.add("WRITE message rate at 64 B, rkdapl / ib_write_bw",
          ratio(m("rkdapl", "write", "bw", 64, "Mmsgps"),
                m("perftest", "write", "bw", 64, "Mmsgps")), 1.3, True)
    t.add("1 MiB WRITE bandwidth / rxe ceiling (crc32 + memcpy)",
          ratio(m("rkdapl", "write", "bw", 1048576, "MBps"), ceiling_both), 0.8, True)
    # Both ends are in this guest and virtual time counts every vCPU: each byte is
    # checksummed and copied once by the sender and once by the receiver.
    t.add("  the same against the loopback ceiling (ceiling / 2: both sides' work)",
          ratio(m("rkdapl", "write", "bw", 1048576, "MBps"),
                ceiling_both / 2 if ceiling_both else None), 0.8, True)
    t.add("repeatability: worst max/min over the passes",
          worst[0][0] if worst else None, 1.01, False, 4)
    print()
    print("=== targets (deterministic figures of this run) ===")
    t.show()


def traces(sync):
    """The READ-gap evidence: ib_core's CQ trace events of one traced 1 MiB READ run per tool.

    cq_process says how long the completion work waited after the CQ's interrupt (virtual us,
    i.e. thousands of instructions); its CPU against cq_schedule's tells whether it ran
    where the interrupt came (the CPU busy with rxe's work); cq_poll how many completions
    each poll found."""
    files = sorted(f for f in os.listdir(sync) if f.startswith("trace-")) \
        if os.path.isdir(sync) else []
    if not files:
        return
    print()
    print("=== READ-gap evidence: one traced 1 MiB READ bw run each (rdma_core:cq_* events; "
          "tracing costs instructions, so these runs are not in the tables) ===")
    print(f"{'run':22} {'sched':>6} {'process':>7} {'wait med us':>11} {'p90':>7} {'max':>7} "
          f"{'same CPU':>8} {'polls':>6} {'wc/poll':>7}")
    line_re = re.compile(r"\[(\d+)\].*?\s(cq_\w+):\s+cq\.id=(\d+)(.*)")
    for name in files:
        waits, polls, comps = [], 0, 0
        sched_cpu, same, nproc, nsched = {}, 0, 0, 0
        for ln in open(os.path.join(sync, name), errors="replace"):
            m = line_re.search(ln)
            if not m:
                continue
            cpu, ev, cq, rest = int(m.group(1)), m.group(2), m.group(3), m.group(4)
            if ev == "cq_schedule":
                nsched += 1
                sched_cpu[cq] = cpu
            elif ev == "cq_process":
                nproc += 1
                w = re.search(r"took (-?\d+)", rest)
                if w:
                    waits.append(int(w.group(1)))
                same += sched_cpu.get(cq) == cpu
            elif ev == "cq_poll":
                r = re.search(r"returned (-?\d+)", rest)
                if r:
                    polls += 1
                    comps += max(int(r.group(1)), 0)
        waits.sort()
        q = (lambda p: waits[min(len(waits) - 1, int(len(waits) * p))]) if waits else None
        label = name[len("trace-"):-len(".txt")]
        print(f"{label:22} {nsched:>6} {nproc:>7} {q(0.5) if q else '-':>11} "
              f"{q(0.9) if q else '-':>7} {waits[-1] if waits else '-':>7} "
              f"{(f'{same}/{nproc}' if nproc else '-'):>8} {polls:>6} "
              f"{(f'{comps / polls:.1f}' if polls else '-'):>7}")


def plot(data, sizes, path, nrep):
    """plot.png: per op, the bandwidth of rkdapl (C and Rust) over raw verbs' against size,
    with the targets; and the instructions per DTO end to end at 64 B over raw's (lat runs)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tools = (("rkdapl", "C API (rkdapl_perf)", "C0", "-o"),
             (RUST, "Rust API (rkdapl_rust_perf)", "C1", "-D"))
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    for ax, op in zip(axes.flat, OPS):
        lo = 1.0
        vals = {tool: {s: ratio(med(data, tool, op, "bw", s, "MBps"),
                                med(data, "raw", op, "bw", s, "MBps")) for s in sizes}
                for tool, *_ in tools}
        for tool, label, colour, style in tools:
            pts = [(s, v) for s, v in vals[tool].items() if v]
            if not pts:
                continue
            ax.plot(*zip(*pts), style, color=colour, label=label, ms=6)
            for s, v in pts:
                lo = min(lo, v)
                # the higher of the two tools' values labelled above its point, the other below
                other = [vals[t][s] for t, *_ in tools if t != tool and vals[t][s]]
                below = not other or v < other[0]
                ax.annotate(f"{v:.3f}", (s, v), textcoords="offset points", fontsize=8,
                            xytext=(7, -13 if below else 5), color=colour)
        # a target is drawn only at the sizes it applies to, as a short bar around the size
        for s in sizes:
            want = BW_TARGET_64 if s == 64 else BW_TARGET
            ax.hlines(want, s / 1.4, s * 1.4, color="C3", lw=2.5,
                      label="target" if s == sizes[0] else None)
            lo = min(lo, want)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [size_label(s) for s in sizes])
        ax.set_xlim(sizes[0] / 2, sizes[-1] * 4)
        ax.minorticks_off()
        ax.set_ylim(min(lo - 0.03, 0.9), 1.03)
        ax.set_xlabel("message size")
        ax.set_ylabel("bandwidth / raw verbs' (1.0: as fast)")
        ax.set_title(f"{op.upper()}: bandwidth against raw verbs (higher is better)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    # the fourth panel: instructions per DTO end to end at 64 B, one in flight
    ax = axes.flat[3]
    width = 0.38
    for k, (tool, label, colour, _) in enumerate(tools):
        vals = [ratio(med(data, tool, op, "lat", 64, "dto_instr"),
                      med(data, "raw", op, "lat", 64, "dto_instr")) for op in OPS]
        xs = [i + (k - 0.5) * width for i in range(len(OPS))]
        if not any(vals):
            continue
        bars = ax.bar([x for x, v in zip(xs, vals) if v], [v for v in vals if v], width,
                      color=colour, label=label)
        ax.bar_label(bars, fmt="%.3f", fontsize=8)
    ax.axhline(LAT_TARGET_64, color="C3", lw=2.5, label=f"target (<= {LAT_TARGET_64})")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(OPS)), [op.upper() for op in OPS])
    heights = [b.get_height() for b in ax.patches]
    ax.set_ylim(min([0.95] + [h - 0.03 for h in heights]),
                max([LAT_TARGET_64 + 0.05] + [h + 0.03 for h in heights]))
    ax.set_ylabel("instructions per DTO / raw verbs' (1.0: as cheap)")
    ax.set_title("64 B, one DTO in flight: instructions per DTO\nend to end against raw verbs "
                 "(lower is better)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"rkdapl against raw verbs (ib_core): QEMU -icount, rxe loopback, median of "
                 f"{nrep} passes")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def size_label(size):
    for unit, n in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= n and size % n == 0:
            return f"{size // n} {unit}"
    return f"{size} B"


def replot(csv_path, png):
    """Draws plot.png from a results.csv (a run's or docs/bench/results.csv)."""
    rows = list(csv.DictReader(open(csv_path)))
    data = collect(rows)
    sizes = sorted({k[3] for k in data if k[0] in ("rkdapl", "raw")})
    plot(data, sizes, png, max((int(r["rep"]) for r in rows if r["rep"].isdigit()), default=0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
