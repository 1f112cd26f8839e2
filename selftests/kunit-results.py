#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The KUnit results one guest copied out, as make check's result lines.

    selftests/kunit-results.py <kernel source tree> <dir>

<dir> holds one file per KUnit suite, the KTAP of /sys/kernel/debug/kunit/<suite>/results
(selftests/guest-lib.sh kunit_suite copies them). Each is parsed by the kernel's own KTAP
parser (tools/testing/kunit/kunit_parser.py, what `kunit.py parse` runs), and every test case
becomes one line on stdout:

    ok - kunit: <suite>: <case>
    ok - kunit: <suite>: <case> # SKIP <reason>
    not ok - kunit: <suite>: <case> # <the case's first failure line>

A suite the parser cannot read, or that failed without a failed case (its init failed, or it
crashed), is one "not ok" line. Exits 0 if it printed lines.
"""
import os
import re
import sys


def main() -> int:
    src, d = sys.argv[1], sys.argv[2]
    sys.path.insert(0, os.path.join(src, 'tools/testing/kunit'))
    import kunit_parser
    from kunit_printer import null_printer

    ok = kunit_parser.TestStatus.SUCCESS
    skipped = kunit_parser.TestStatus.SKIPPED
    out = []
    for f in sorted(os.listdir(d)):
        suite = f.removesuffix('.ktap')
        with open(os.path.join(d, f), errors='replace') as fh:
            test = kunit_parser.parse_run_tests(fh.readlines(), null_printer)
        # The file is a one-suite KTAP document: the suite is the root's only subtest.
        suites = test.subtests or [test]
        for s in suites:
            if not s.subtests:
                if s.status == skipped:
                    out.append(f'ok - kunit: {s.name or suite} # SKIP {s.skip_reason or "skipped"}')
                elif s.status != ok:
                    out.append(f'not ok - kunit: {suite} # {s.status.name.lower()}: '
                               'no case result (the suite failed before its cases ran, or '
                               'its results could not be parsed)')
                continue
            for c in s.subtests:
                name = f'kunit: {s.name or suite}: {c.name}'
                if c.status == ok:
                    out.append(f'ok - {name}')
                elif c.status == skipped:
                    out.append(f'ok - {name} # SKIP {c.skip_reason or "skipped"}')
                else:
                    why = next((l.strip().lstrip('#').strip() for l in c.log
                                if re.search(r'FAILED|Expected|BUG|Oops', l)),
                               c.status.name.lower())
                    out.append(f'not ok - {name} # {why}')
    print('\n'.join(out))
    return 0 if out else 1


if __name__ == '__main__':
    sys.exit(main())
