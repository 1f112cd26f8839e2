#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turns a `make bench-wall` run directory (the indicative two-guest wall-clock matrix) into
results.csv, plot.png and the printed tables; its row parsers also serve
scripts/bench_det_report.py (`make bench`).

    scripts/bench_report.py out/bench-<ts>

Reads sync/kresults.txt (rkdapl_perf and raw_perf result lines), sync/pt-b-*.txt (perftest
client output) and sync/ceiling.txt, written by qemu/bench-b.sh in guest B.

Units: MBps is 10^6 bytes/s. perftest prints MB/sec in 2^20 bytes/s with two decimals; its MBps
here is its MsgRate (10^6 messages/s, six decimals) times the size below 10 MiB/s, its average
BW converted above.
perftest's latency columns: t_typical is the median, "99% percentile" the p99; ib_write_lat
reports half of its ping-pong round trip, ib_read_lat a whole RDMA READ. The kernel tools
report the post-to-completion time of each DTO (one in flight): a whole round trip for both
WRITE (its ACK) and READ. post_ns (kernel tools only) is the median time inside the post call.

Every figure is measured in each of RKDAPL_BENCH_REPEAT passes (column rep); the tables show
the median over the passes and, for ratios, the range of the per-pass ratios.
"""
import statistics
import csv
import glob
import os
import re
import sys

FIELDS = ["tool", "op", "kind", "size", "MBps", "Mmsgps", "lat_med_us", "lat_p99_us",
          "post_ns", "empty_ns", "dto_ns", "rep"]
VALUES = ["MBps", "Mmsgps", "lat_med_us", "lat_p99_us", "post_ns"]
MIB = 1048576 / 1e6


def kernel_rows(path, base_mode="poll"):
    rows, fails = [], []
    if not os.path.exists(path):
        return rows, fails
    for line in open(path):
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if line.startswith("result "):
            row = {k: kv.get(k, "") for k in FIELDS}
            row["rep"] = row["rep"] or "1"
            if kv.get("mode", base_mode) != base_mode:  # e.g. "rkdapl-event"
                row["tool"] += "-" + kv["mode"]
            if kv.get("signal", "1") != "1":         # e.g. "rkdapl-sig16"
                row["tool"] += "-sig" + kv["signal"]
            if kv.get("batch", "1") != "1":          # e.g. "rkdapl-batch8"
                row["tool"] += "-batch" + kv["batch"]
            if kv.get("cq", "default") != "default":  # e.g. "raw-cqwq"
                row["tool"] += "-cq" + kv["cq"]
            if kv.get("inline", "0") != "0":         # e.g. "raw-inline64"
                row["tool"] += "-inline" + kv["inline"]
            if kv.get("buf", "kmalloc") != "kmalloc":  # "rkdapl-sparse"
                row["tool"] += "-" + kv["buf"]
            rows.append(row)
        elif line.startswith("fail "):
            fails.append(line.strip())
    return rows, fails


def perftest_rows(sync):
    rows, fails = [], []
    for path in sorted(glob.glob(os.path.join(sync, "pt-b-*.txt"))):
        text = open(path).read()
        head = re.match(r"# perftest (\w+) (\w+) (\d+) (\d+) ?(\d*)", text)
        if not head:
            continue
        op, kind, size, iters, rep = head.groups()
        nums = [ln.split() for ln in text.splitlines()
                if re.match(r"^\s*\d+\s+\d+\s+[\d.]+", ln)]
        ok = re.search(r"^exit 0$", text, re.M)
        if not nums or not ok:
            fails.append(f"fail tool=perftest op={op} kind={kind} size={size} iters={iters}"
                         f" ({os.path.basename(path)})")
            continue
        n = nums[-1]
        row = {k: "" for k in FIELDS}
        row.update({"tool": "perftest", "op": op, "kind": kind, "size": n[0], "rep": rep or "1"})
        if kind == "bw":    # bytes iters peak avg msgrate
            # the average BW column has 2 decimals of MiB/s (0.00 at the smallest sizes here),
            # MsgRate 6 decimals of Mpps (coarse at the largest): take the finer one
            avg = float(n[3])
            mbps = avg * MIB if avg >= 10 else float(n[4]) * int(n[0])
            row["MBps"] = f"{mbps:.4f}"
            row["Mmsgps"] = n[4]
            if float(n[4]) > 0:
                row["dto_ns"] = f"{1000 / float(n[4]):.0f}"
        else:               # bytes iters min max typical avg stdev p99 p99.9
            row["lat_med_us"] = n[4]
            row["lat_p99_us"] = n[7] if len(n) > 7 else ""
        rows.append(row)
    return rows, fails


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(x, digits=2):
    return f"{x:.{digits}f}" if x is not None else "-"


def summarise(rows):
    """(tool, op, kind, size) -> median of each value over the passes, and n."""
    groups = {}
    for r in rows:
        groups.setdefault((r["tool"], r["op"], r["kind"], int(r["size"])), []).append(r)
    med = {}
    for key, rs in groups.items():
        m = {"n": len(rs)}
        for col in VALUES:
            vals = [num(r[col]) for r in rs if num(r[col]) is not None]
            m[col] = statistics.median(vals) if vals else None
        med[key] = m
    return med


def value(r, col):
    v = num(r[col])
    if v is not None and r["tool"] == "perftest" and r["op"] == "write" and col == "lat_med_us":
        v *= 2      # ib_write_lat: half a ping-pong round trip
    return v


def ratio_cell(rows, other, op, kind, size, col=None):
    """"<ratio of medians> [<min>-<max> of per-pass ratios]" of rkdapl over `other`."""
    col = col or ("MBps" if kind == "bw" else "lat_med_us")
    per = {}
    for r in rows:
        if r["op"] == op and r["kind"] == kind and int(r["size"]) == size and \
                r["tool"] in ("rkdapl", other):
            per.setdefault(r["rep"], {})[r["tool"]] = value(r, col)
    pairs = [(p["rkdapl"], p[other]) for p in per.values()
             if p.get("rkdapl") is not None and p.get(other)]
    a = [p["rkdapl"] for p in per.values() if p.get("rkdapl") is not None]
    b = [p[other] for p in per.values() if p.get(other)]
    if not a or not b:
        return "-"
    cell = f"{statistics.median(a) / statistics.median(b):.2f}"
    if len(pairs) > 1:
        rs = [x / y for x, y in pairs]
        cell += f" [{min(rs):.2f}-{max(rs):.2f}]"
    return cell


def targets(med, ceiling):
    """The wall-clock targets (docs/benchmarks.md), each against figures of this run."""
    def get(tool, op, kind, size, col):
        v = med.get((tool, op, kind, size), {}).get(col)
        if v is not None and tool == "perftest" and op == "write" and col == "lat_med_us":
            v *= 2
        return v

    def line(what, a, b, want, better_high):
        if a is None or not b:
            print(f"    {what:58} -")
            return
        r = a / b
        ok = r >= want if better_high else r <= want
        print(f"    {what:58} {r:6.2f}  ({'met' if ok else 'MISSED'}; target "
              f"{'>=' if better_high else '<='} {want})")

    print()
    print("=== targets (medians of this run; indicative) ===")
    line("WRITE bandwidth at 64 KiB, rkdapl / ib_write_bw",
         get("rkdapl", "write", "bw", 65536, "MBps"),
         get("perftest", "write", "bw", 65536, "MBps"), 1.0, True)
    line("WRITE message rate at 64 B, rkdapl / ib_write_bw",
         get("rkdapl", "write", "bw", 64, "Mmsgps"),
         get("perftest", "write", "bw", 64, "Mmsgps"), 1.3, True)
    line("WRITE latency at 2 B, rkdapl / (2 x ib_write_lat)",
         get("rkdapl", "write", "lat", 2, "lat_med_us"),
         get("perftest", "write", "lat", 2, "lat_med_us"), 0.8, False)
    line("1 MiB WRITE bandwidth, rkdapl / rxe ceiling (crc32 + memcpy)",
         get("rkdapl", "write", "bw", 1048576, "MBps"), ceiling, 0.8, True)
    worst = None
    for (tool, op, kind, size), m in med.items():
        if tool != "rkdapl":
            continue
        col = "MBps" if kind == "bw" else "lat_med_us"
        a, b = m.get(col), get("raw", op, kind, size, col)
        if a is None or not b:
            continue
        dev = a / b - 1 if kind == "lat" else b / a - 1    # > 0: rkdapl slower
        if worst is None or dev > worst[0]:
            worst = (dev, op, kind, size)
    if worst:
        print(f"    {'worst rkdapl vs raw (slower by), ' + f'{worst[1]} {worst[2]} {worst[3]}':58} "
              f"{worst[0] * 100:5.1f}%  ({'met' if worst[0] <= 0.05 else 'MISSED'}; target <= 5%)")
    for op in ("write", "read", "send"):
        a = get("rkdapl", op, "bw", 64, "post_ns")
        b = get("raw", op, "bw", 64, "post_ns")
        line(f"post call at 64 B {op}, rkdapl / ib_post_send (CPU cost)", a, b, 1.05, False)


def plot(rows, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(14, 5.5))
    for ax, kind, col, label in ((axes[0], "bw", "MBps", "bandwidth [MB/s, 10^6]"),
                                 (axes[1], "lat", "lat_med_us", "median latency [us]")):
        series = {}
        for r in rows:
            if r["kind"] == kind and (num(r[col]) or 0) > 0:
                series.setdefault((r["tool"], r["op"]), []).append((int(r["size"]), num(r[col])))
        styles = {"rkdapl": "-o", "raw": "--s", "perftest": ":^",  # line style: tool
                  "rkdapl-event": "-.o", "raw-event": "-.s"}
        colours = {"write": "C0", "read": "C1", "send": "C2"}        # colour: operation
        for (tool, op), pts in sorted(series.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], styles.get(tool, "-"),
                    color=colours.get(op), label=f"{tool} {op}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size [bytes]")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_title("bandwidth (" + title + ")")
    axes[1].set_title("latency, one DTO in flight, one round trip\n(ib_write_lat's figure x2; "
                      + title + ")")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    out = sys.argv[1]
    sync = os.path.join(out, "sync")
    flavour = open(os.path.join(out, "flavour")).read().strip() \
        if os.path.exists(os.path.join(out, "flavour")) else "?"
    krows, kfails = kernel_rows(os.path.join(sync, "kresults.txt"))
    prows, pfails = perftest_rows(sync)
    rows = krows + prows
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)

    med = summarise(rows)
    nrep = max((int(r["rep"]) for r in rows), default=0)
    print(f"=== rkdapl bench-wall, INDICATIVE (wall clock, TCG: a figure moves 1.6-3.7x between "
          f"passes; `make bench` has the deterministic figures) ({flavour} kernel): "
          f"{len(rows)} results over {nrep} pass(es), "
          f"{len(kfails) + len(pfails)} failed runs; {out}/results.csv ===")
    print("    medians over the passes (n = runs that produced the figure)")
    print(f"{'tool':13} {'op':6} {'kind':4} {'size':>8} {'MBps':>10} {'Mmsgps':>9} "
          f"{'med_us':>10} {'p99_us':>10} {'post_ns':>8} {'n':>2}")
    for key in sorted(med, key=lambda k: (k[2], k[1], k[3], k[0])):
        m = med[key]
        print(f"{key[0]:13} {key[1]:6} {key[2]:4} {key[3]:>8} {fmt(m['MBps'], 4):>10} "
              f"{fmt(m['Mmsgps'], 6):>9} {fmt(m['lat_med_us']):>10} {fmt(m['lat_p99_us']):>10} "
              f"{fmt(m['post_ns'], 1):>8} {m['n']:>2}")
    for line in kfails + pfails:
        print(line)

    keys = sorted({k[1:] for k in med}, key=lambda k: (k[1], k[0], k[2]))
    print()
    print("=== ratios of medians [range of the per-pass ratios]"
          " (bw: MBps, higher is better; lat: median us, lower is better) ===")
    print("    perftest lat: ib_write_lat's figure doubled (it reports half its ping-pong round"
          " trip; the kernel tools a whole one); ib_read_lat's as is")
    print(f"{'op':6} {'kind':4} {'size':>8} {'rkdapl':>10} {'raw':>10} {'perftest':>10} "
          f"{'rkdapl/raw':>22} {'rkdapl/perftest':>22}")
    for op, kind, size in keys:
        col = "MBps" if kind == "bw" else "lat_med_us"
        v = {t: med.get((t, op, kind, size), {}).get(col) for t in ("rkdapl", "raw", "perftest")}
        if v["perftest"] is not None and op == "write" and kind == "lat":
            v["perftest"] *= 2
        print(f"{op:6} {kind:4} {size:>8} {fmt(v['rkdapl']):>10} {fmt(v['raw']):>10} "
              f"{fmt(v['perftest']):>10} {ratio_cell(rows, 'raw', op, kind, size):>22} "
              f"{ratio_cell(rows, 'perftest', op, kind, size):>22}")

    sig = sorted({k[0] for k in med if "-sig" in k[0]})
    if sig:
        print()
        print("=== selective signalling: WRITE bandwidth with every Nth DTO signalled, over every"
              " DTO signalled (same tool), medians ===")
        print(f"{'tool':13} {'size':>8} {'MBps':>10} {'signal=1':>10} {'ratio':>7}")
        for t in sig:
            base = t.split("-sig")[0]
            for (tool, op, kind, size), m in sorted(med.items(), key=lambda kv: kv[0][3]):
                if tool != t or op != "write" or kind != "bw":
                    continue
                b = med.get((base, op, kind, size), {}).get("MBps")
                r = f"{m['MBps'] / b:.2f}" if m["MBps"] is not None and b else "-"
                print(f"{t:13} {size:>8} {fmt(m['MBps'], 4):>10} {fmt(b, 4):>10} {r:>7}")

    print()
    print("=== post call: median ns inside rkdapl_post_*() vs ib_post_send(), medians over passes ===")
    print(f"{'op':6} {'kind':4} {'size':>8} {'rkdapl':>9} {'raw':>9} {'rkdapl/raw':>22}")
    for op, kind, size in keys:
        a = med.get(("rkdapl", op, kind, size), {}).get("post_ns")
        b = med.get(("raw", op, kind, size), {}).get("post_ns")
        if a is None and b is None:
            continue
        print(f"{op:6} {kind:4} {size:>8} {fmt(a, 1):>9} {fmt(b, 1):>9} "
              f"{ratio_cell(rows, 'raw', op, kind, size, 'post_ns'):>22}")

    ceil = os.path.join(sync, "ceiling.txt")
    if os.path.exists(ceil):
        kv = dict(re.findall(r"(\w+)=(\S+)", open(ceil).read()))
        print()
        print(f"=== rxe ceiling in guest B (one vCPU, {kv.get('size')}-byte buffer): "
              f"crc32 {kv.get('crc32_MBps')} MB/s, memcpy {kv.get('memcpy_MBps')} MB/s, "
              f"crc32 + memcpy {kv.get('both_MBps')} MB/s ===")
        print("    rxe computes the ICRC over every packet on both sides and copies the payload"
              " at least once per side")
        targets(med, num(kv.get("both_MBps")))

    if rows:
        try:
            prow = [dict(m, tool=k[0], op=k[1], kind=k[2], size=k[3]) for k, m in med.items()]
            for r in prow:      # one round trip for every tool, as in the ratio table
                if r["tool"] == "perftest" and r["op"] == "write" and r["lat_med_us"]:
                    r["lat_med_us"] *= 2
            plot(prow,
                 os.path.join(out, "plot.png"),
                 f"{flavour} kernel, QEMU TCG, rxe, median of {nrep}")
            print(f"plot: {out}/plot.png")
        except ImportError as e:
            print(f"no plot: {e} (make deps installs python3-matplotlib)")
    return 1 if not rows or kfails or pfails else 0


if __name__ == "__main__":
    sys.exit(main())
