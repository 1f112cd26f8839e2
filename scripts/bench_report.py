#!/usr/bin/env python3
"""Turns a `make bench` run directory into results.csv, plot.png and the printed tables.

    scripts/bench_report.py out/bench-<ts>

Reads sync/kresults.txt (rkdapl_perf and raw_perf result lines), sync/pt-b-*.txt (perftest
client output) and sync/ceiling.txt, written by qemu/bench-b.sh in guest B.

Units: MBps is 10^6 bytes/s. perftest prints MB/sec in 2^20 bytes/s with two decimals; its MBps
here is its MsgRate (10^6 messages/s, six decimals) times the size below 10 MiB/s, its average
BW converted above.
perftest's latency columns: t_typical is the median, "99% percentile" the p99; ib_write_lat
reports half of its ping-pong round trip, ib_read_lat a whole RDMA READ. The kernel tools
report the post-to-completion time of each DTO (one in flight): a whole round trip for both
WRITE (its ACK) and READ.
"""
import csv
import glob
import os
import re
import sys

FIELDS = ["tool", "op", "kind", "size", "MBps", "Mmsgps", "lat_med_us", "lat_p99_us"]
MIB = 1048576 / 1e6


def kernel_rows(path):
    rows, fails = [], []
    if not os.path.exists(path):
        return rows, fails
    for line in open(path):
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if line.startswith("result "):
            row = {k: kv.get(k, "") for k in FIELDS}
            if kv.get("mode", "poll") != "poll":     # e.g. "rkdapl-event"
                row["tool"] += "-" + kv["mode"]
            rows.append(row)
        elif line.startswith("fail "):
            fails.append(line.strip())
    return rows, fails


def perftest_rows(sync):
    rows, fails = [], []
    for path in sorted(glob.glob(os.path.join(sync, "pt-b-*.txt"))):
        text = open(path).read()
        head = re.match(r"# perftest (\w+) (\w+) (\d+) (\d+)", text)
        if not head:
            continue
        op, kind, size, iters = head.groups()
        nums = [ln.split() for ln in text.splitlines()
                if re.match(r"^\s*\d+\s+\d+\s+[\d.]+", ln)]
        ok = re.search(r"^exit 0$", text, re.M)
        if not nums or not ok:
            fails.append(f"fail tool=perftest op={op} kind={kind} size={size} iters={iters}"
                         f" ({os.path.basename(path)})")
            continue
        n = nums[-1]
        row = {"tool": "perftest", "op": op, "kind": kind, "size": n[0],
               "MBps": "", "Mmsgps": "", "lat_med_us": "", "lat_p99_us": ""}
        if kind == "bw":    # bytes iters peak avg msgrate
            # the average BW column has 2 decimals of MiB/s (0.00 at the smallest sizes here),
            # MsgRate 6 decimals of Mpps (coarse at the largest): take the finer one
            avg = float(n[3])
            mbps = avg * MIB if avg >= 10 else float(n[4]) * int(n[0])
            row["MBps"] = f"{mbps:.4f}"
            row["Mmsgps"] = n[4]
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
    axes[1].set_title("latency, one DTO in flight (" + title + ")")
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

    print(f"=== rkdapl bench ({flavour} kernel): {len(rows)} results, "
          f"{len(kfails) + len(pfails)} failed runs; {out}/results.csv ===")
    print(f"{'tool':9} {'op':6} {'kind':4} {'size':>8} {'MBps':>10} {'Mmsgps':>8} "
          f"{'med_us':>10} {'p99_us':>10}")
    for r in rows:
        print(f"{r['tool']:9} {r['op']:6} {r['kind']:4} {r['size']:>8} {r['MBps']:>10} "
              f"{r['Mmsgps']:>8} {r['lat_med_us']:>10} {r['lat_p99_us']:>10}")
    for line in kfails + pfails:
        print(line)

    idx = {(r["tool"], r["op"], r["kind"], int(r["size"])): r for r in rows}
    keys = sorted({(r["op"], r["kind"], int(r["size"])) for r in rows},
                  key=lambda k: (k[1], k[0], k[2]))
    print()
    print("=== ratios (bw: MBps, higher is better; lat: median us, lower is better) ===")
    print("    note: ib_write_lat reports half a round trip; the kernel tools a whole one")
    print(f"{'op':6} {'kind':4} {'size':>8} {'rkdapl':>10} {'raw':>10} {'perftest':>10} "
          f"{'rkdapl/raw':>11} {'rkdapl/perftest':>16}")
    for op, kind, size in keys:
        col = "MBps" if kind == "bw" else "lat_med_us"
        v = {t: num(idx.get((t, op, kind, size), {}).get(col)) for t in
             ("rkdapl", "raw", "perftest")}

        def ratio(a, b):
            return f"{a / b:.2f}" if a is not None and b else "-"

        def fmt(x):
            return f"{x:.2f}" if x is not None else "-"
        print(f"{op:6} {kind:4} {size:>8} {fmt(v['rkdapl']):>10} {fmt(v['raw']):>10} "
              f"{fmt(v['perftest']):>10} {ratio(v['rkdapl'], v['raw']):>11} "
              f"{ratio(v['rkdapl'], v['perftest']):>16}")

    ceil = os.path.join(sync, "ceiling.txt")
    if os.path.exists(ceil):
        kv = dict(re.findall(r"(\w+)=(\S+)", open(ceil).read()))
        print()
        print(f"=== rxe ceiling in guest B (one vCPU, {kv.get('size')}-byte buffer): "
              f"crc32 {kv.get('crc32_MBps')} MB/s, memcpy {kv.get('memcpy_MBps')} MB/s, "
              f"crc32 + memcpy {kv.get('both_MBps')} MB/s ===")
        print("    rxe computes the ICRC over every packet on both sides and copies the payload"
              " at least once per side")

    if rows:
        try:
            plot(rows, os.path.join(out, "plot.png"), f"{flavour} kernel, QEMU TCG, rxe")
            print(f"plot: {out}/plot.png")
        except ImportError as e:
            print(f"no plot: {e} (make deps installs python3-matplotlib)")
    return 1 if not rows or kfails or pfails else 0


if __name__ == "__main__":
    sys.exit(main())
