#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The ratio table of `make bench-blk` (qemu/bench-blk.sh): rkdapl's block device against
nvme-rdma, the same fio jobs in one boot.

    scripts/bench_blk_report.py OUT_DIR
    scripts/bench_blk_report.py --plot blk-summary.csv blk-plot.png   (only the plot)

reads OUT_DIR/sync/blk/<dev>-<job>-<pass>.json (fio's JSON), writes OUT_DIR/blk-results.csv
(every pass), OUT_DIR/blk-summary.csv (the medians and the ratio's min and max per job) and
OUT_DIR/blk-plot.png (the ratio per job against its target, bars) and prints one row per job:
each device's median over the passes with its spread (max/min - 1), the ratio rkdblk / nvme of
each pass (median, min and max) and the target of each job (docs/blockdev.md). A ratio is IOPS
for the 4 KiB jobs, MB/s for the 128 KiB ones (the same thing at a fixed size, but the target is
written that way). Exit status 1 if a run is missing or failed.
"""

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

JOBS = [
    # job, what, metric, target
    ("randread-4k-qd1", "4 KiB random read, QD1", "iops", 1.03),
    ("randwrite-4k-qd1", "4 KiB random write, QD1", "iops", 1.01),
    ("randread-4k-qd16", "4 KiB random read, QD16", "iops", 1.05),
    ("randwrite-4k-qd16", "4 KiB random write, QD16", "iops", 1.03),
    ("read-128k-qd16", "128 KiB sequential read, QD16", "MB/s", 1.0),
    ("write-128k-qd16", "128 KiB sequential write, QD16", "MB/s", 1.0),
]
DEVS = ("rkdblk0", "nvme0n1")


def figure(path, metric):
    """The job's IOPS or MB/s (decimal) from fio's JSON, or None."""
    try:
        job = json.loads(path.read_text())["jobs"][0]
    except (OSError, ValueError, KeyError, IndexError):
        return None
    if job.get("error"):
        return None
    side = job["read"] if job["read"]["io_bytes"] else job["write"]
    if not side["io_bytes"]:
        return None
    if metric == "iops":
        return side["iops"]
    return side["bw_bytes"] / 1e6


def spread(values):
    return max(values) / min(values) - 1 if values and min(values) > 0 else float("nan")


SUMMARY = ["job", "unit", "rkdblk", "nvme_rdma", "ratio", "ratio_min", "ratio_max"]


def plot(summary, path):
    """blk-plot.png: per job, the ratio rkdblk / nvme-rdma (bar: median, whisker: min-max over
    the passes) against the job's target (JOBS). summary: rows as in blk-summary.csv."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_job = {r["job"]: r for r in summary}
    jobs = [j for j in JOBS if j[0] in by_job and by_job[j[0]]["ratio"] not in ("", None)]
    fig, ax = plt.subplots(figsize=(11, 5.5))
    labels, tops = [], [1.0]
    lows = [float(by_job[j[0]]["ratio_min"]) for j in jobs] or [1.0]
    ylo = min(0.85, min(lows) - 0.03)
    for i, (job, what, metric, target) in enumerate(jobs):
        r = by_job[job]
        v, lo, hi = float(r["ratio"]), float(r["ratio_min"]), float(r["ratio_max"])
        met = v >= target
        ax.bar(i, v, 0.6, color="C2" if met else "C1",
               yerr=[[v - lo], [hi - v]], capsize=4, ecolor="black")
        # the value at the bar's foot, clear of the whisker
        ax.annotate(f"{v:.3f}", (i, ylo), textcoords="offset points", xytext=(0, 6),
                    ha="center", fontsize=9, color="white", weight="bold")
        ax.hlines(target, i - 0.42, i + 0.42, color="C3", lw=2.5)
        ax.annotate(f">= {target:.2f}", (i - 0.42, target), textcoords="offset points",
                    xytext=(1, 4), ha="left", fontsize=8, color="C3",
                    bbox=dict(fc="white", ec="none", pad=0.5, alpha=0.85))
        unit = "IOPS" if metric == "iops" else "MB/s"
        a, b = float(r["rkdblk"]), float(r["nvme_rdma"])
        fmt = (lambda x: f"{x:,.0f}") if metric == "iops" else (lambda x: f"{x:.1f}")
        labels.append(f"{what.replace(', ', chr(10))}\n{fmt(a)} / {fmt(b)} {unit}")
        tops += [hi, target]
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xticks(range(len(jobs)), labels, fontsize=8)
    ax.set_ylim(ylo, max(tops) + 0.03)
    ax.set_ylabel("rkdblk / nvme-rdma (1.0: as fast; higher is better)")
    ax.set_title("rkdblk against nvme-rdma per fio job (QEMU -icount, rxe loopback, brd):\n"
                 "median over the passes, whiskers min-max; tick labels rkdblk / nvme-rdma")
    from matplotlib.patches import Patch
    from matplotlib.lines import Line2D
    ax.legend(handles=[Patch(color="C2", label="target met"),
                       Patch(color="C1", label="target MISSED"),
                       Line2D([], [], color="C3", lw=2.5, label="target")],
              fontsize=8, loc="upper left")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def draw(summary, path):
    try:
        plot(summary, path)
        print(f"plot: {path.name} beside this report")
    except ImportError as e:
        print(f"no plot: {e} (make deps installs python3-matplotlib)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--plot", nargs=2, metavar=("CSV", "PNG"),
                    help="only draw the plot of a blk-summary.csv")
    args = ap.parse_args()
    if args.plot:
        plot(list(csv.DictReader(open(args.plot[0]))), args.plot[1])
        return 0
    if not args.out:
        ap.error("the run directory is required")
    out = Path(args.out)
    blk = out / "sync" / "blk"
    passes = sorted({int(p.stem.rsplit("-", 1)[1]) for p in blk.glob("*.json")})
    passes = [p for p in passes if p >= 1]
    if not passes:
        print(f"bench-blk: no results in {blk}")
        return 1
    setup = (blk / "setup.txt").read_text().strip() if (blk / "setup.txt").exists() else ""
    rows, bad = [], 0
    for job, what, metric, target in JOBS:
        per = {d: [] for d in DEVS}
        ratios = []
        for p in passes:
            v = {d: figure(blk / f"{d}-{job}-{p}.json", metric) for d in DEVS}
            for d in DEVS:
                if v[d] is None:
                    bad += 1
                else:
                    per[d].append(v[d])
            if None not in v.values() and v["nvme0n1"] > 0:
                ratios.append(v["rkdblk0"] / v["nvme0n1"])
        rows.append((job, what, metric, target, per, ratios))

    print(f"rkdapl block device (rkdblk) / nvme-rdma, same guest, same rxe loopback, brd backing;"
          f" {len(passes)} passes, -icount (virtual time)")
    if setup:
        for line in setup.splitlines():
            print(f"  {line}")
    hdr = f"{'job':32} {'unit':5} {'rkdblk':>10} {'spread':>7} {'nvme-rdma':>10} {'spread':>7}" \
          f" {'ratio':>6} {'min':>6} {'max':>6} {'target':>7}  verdict"
    print(hdr)
    print("-" * len(hdr))
    with open(out / "blk-results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["job", "unit", "pass", "rkdblk", "nvme_rdma", "ratio"])
        for job, what, metric, target, per, ratios in rows:
            for i, p in enumerate(passes):
                a = per["rkdblk0"][i] if i < len(per["rkdblk0"]) else ""
                b = per["nvme0n1"][i] if i < len(per["nvme0n1"]) else ""
                r = ratios[i] if i < len(ratios) else ""
                w.writerow([job, metric, p, a, b, r])
            if not ratios:
                print(f"{what:32} {metric:5} {'(missing)':>10}")
                continue
            a, b = per["rkdblk0"], per["nvme0n1"]
            med = statistics.median(ratios)
            verdict = "met" if med >= target else f"MISSED by {(1 - med / target) * 100:.1f}%"
            print(f"{what:32} {metric:5} {statistics.median(a):10.1f} {spread(a) * 100:6.1f}%"
                  f" {statistics.median(b):10.1f} {spread(b) * 100:6.1f}%"
                  f" {med:6.3f} {min(ratios):6.3f} {max(ratios):6.3f} {'>= ' + str(target):>7}  {verdict}")
    summary = []
    for job, what, metric, target, per, ratios in rows:
        if ratios:
            summary.append(dict(zip(SUMMARY, [
                job, metric, f"{statistics.median(per['rkdblk0']):.6g}",
                f"{statistics.median(per['nvme0n1']):.6g}", f"{statistics.median(ratios):.4f}",
                f"{min(ratios):.4f}", f"{max(ratios):.4f}"])))
    with open(out / "blk-summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY)
        w.writeheader()
        w.writerows(summary)
    if summary:
        draw(summary, out / "blk-plot.png")
    if bad:
        print(f"bench-blk: {bad} runs missing or failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
