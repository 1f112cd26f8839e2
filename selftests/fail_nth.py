#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Allocation-failure sweep of one rkdapl operation (runs inside a guest, selftests/inject.sh).

    fail_nth.py OP [MAX]

OP is written to /sys/kernel/debug/rkdapl_fault/op (selftests/kmod/rkdapl_fault.c), which
runs the operation in this thread. Before attempt N, N is written to
/proc/thread-self/fail-nth: the Nth fault-injection point this thread passes (a slab or page
allocation, with failslab and fail_page_alloc set to consider sleeping allocations) fails.
Reading fail-nth back gives 0 if that happened. N goes 1, 2, 3, ... until an attempt passes
fewer than N points: the operation then ran with no failure and must succeed. This is the
systematic sweep of Documentation/fault-injection/fault-injection.rst.

Every attempt with a failure must end in a clean error or succeed (a failure some code path
tolerates); these errors fail the sweep: ETIME (an awaited event never came: a hang),
EPROTO (a wrong event, or a free failed), EBADMSG (wrong data). ENOLINK is the one known
silence, listed but not failed: the IB CM could not allocate a DREQ and rdma_cm reports no
DISCONNECTED (see rkdapl_ep_disconnect() in include/rkdapl.h). Prints one summary line and
exits 0 if the sweep passed, 1 if not.
"""
import errno
import os
import sys
import time

BAD = {errno.ETIME, errno.EPROTO, errno.EBADMSG}


def main():
    op = sys.argv[1].encode()
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    ctl = os.open("/sys/kernel/debug/rkdapl_fault/op", os.O_WRONLY)
    nth = os.open("/proc/thread-self/fail-nth", os.O_RDWR)
    errs = {}
    bad = []
    t0 = time.monotonic()
    for n in range(1, limit + 1):
        os.write(nth, b"%d" % n)
        try:
            os.write(ctl, op)
            err = 0
        except OSError as e:
            err = e.errno
        left = int(os.pread(nth, 32, 0))
        os.write(nth, b"0")
        if left:
            # Fewer than n points were passed: nothing was made to fail.
            secs = time.monotonic() - t0
            spread = ", ".join("%s x%d" % (k, v) for k, v in sorted(errs.items()))
            ok = err == 0 and not bad
            final = "succeeded" if err == 0 else "FAILED: %s" % errno.errorcode.get(err, err)
            print("%s: %d injection points, each failed once: %s; then without a failure it %s "
                  "(%.0f s)%s" % (op.decode(), n - 1, spread or "none", final, secs,
                                  "; BAD: " + ", ".join(bad) if bad else ""))
            return 0 if ok else 1
        name = "ok" if err == 0 else "-" + errno.errorcode.get(err, str(err))
        errs[name] = errs.get(name, 0) + 1
        if err in BAD:
            bad.append("point %d: -%s" % (n, errno.errorcode[err]))
    print("%s: still failing at point %d; gave up" % (op.decode(), limit))
    return 1


if __name__ == "__main__":
    sys.exit(main())
