#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The ratio table of `make bench-blk` (qemu/bench-blk.sh): rkdapl's block device against
nvme-rdma, the same fio jobs in one boot.

    scripts/bench_blk_report.py OUT_DIR

reads OUT_DIR/sync/blk/<dev>-<job>-<pass>.json (fio's JSON), writes OUT_DIR/blk-results.csv
and prints one row per job: each device's median over the passes with its spread
(max/min - 1), the ratio rkdblk / nvme of each pass (median, min and max) and the target of
each job (docs/blockdev.md). A ratio is IOPS for the 4 KiB jobs, MB/s for the 128 KiB ones (the same thing at a
fixed size, but the target is written that way). Exit status 1 if a run is missing or failed.
"""

import csv
import json
import statistics
import sys
from pathlib import Path

JOBS = [
    # job, what, metric, target
    ("randread-4k-qd1", "4 KiB random read, QD1", "iops", 0.9),
    ("randwrite-4k-qd1", "4 KiB random write, QD1", "iops", 0.9),
    ("randread-4k-qd16", "4 KiB random read, QD16", "iops", 1.0),
    ("randwrite-4k-qd16", "4 KiB random write, QD16", "iops", 1.0),
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


def main():
    out = Path(sys.argv[1])
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
            verdict = "met" if med >= target else f"MISSED by {(1 - med / target) * 100:.0f}%"
            print(f"{what:32} {metric:5} {statistics.median(a):10.1f} {spread(a) * 100:6.1f}%"
                  f" {statistics.median(b):10.1f} {spread(b) * 100:6.1f}%"
                  f" {med:6.3f} {min(ratios):6.3f} {max(ratios):6.3f} {'>= ' + str(target):>7}  {verdict}")
    if bad:
        print(f"bench-blk: {bad} runs missing or failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
