#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""KCSAN reports in guest logs, as findings (`FLAVOUR=kcsan make check`, selftests/run.sh).

    qemu/kcsan-scan.py [--top DIR] [--summary FILE] ROLE=LOG[,LOG...]...

Reads each guest's kernel logs (dmesg-<role>.txt and console-<role>.log: the console keeps
what the dmesg ring may have dropped), groups the "BUG: KCSAN:" reports by race (their title:
the two racing functions, or one for a race at unknown origin) and prints TAP lines without
numbers, in selftests/run.sh's style:

    ok - KCSAN active in guest A (...)       KCSAN enabled, its boot self-test passed; "not ok"
                                             if not: a run that checked nothing is a failure
    not ok - KCSAN data-race in f / g [where] # TODO ...   one line per distinct race

A race is a finding, not a failure: TAP's TODO directive says "known, not counted".
[where] says whose code the racing accesses are in:
    rkdapl       an access is in rkdapl (rkdapl.ko, the Rust RDMA layer kernel::rdma,
                 rust/helpers/rdma.c), or in a kernel helper (rust_helper_*) called from it
    rkdapl-test  the same for the selftest and sample modules (rkdapl_*.ko)
    via-rkdapl   both accesses are in other code (ib_core, rxe, ...), one reached from rkdapl
    elsewhere    no rkdapl code on either stack (the kernel, rxe, ib_core, 9p, net, ...)
KCSAN instruments C only: rkdapl's Rust code makes no watched access itself, so a race with
a plain Rust access shows as "unknown origin" from the C side.

--summary FILE gets every distinct race with its accesses, stacks (Rust symbols demangled
when c++filt can) and one full report. Exit status 0 unless a log is unreadable.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

TS = re.compile(r'^\[\s*\d+\.\d+\] ?')
TITLE = re.compile(r'BUG: KCSAN: (?P<kind>.+?) in (?P<funcs>.+)$')
ACCESS = re.compile(r'^(?P<unknown>race at unknown origin, with )?(?P<type>.+?) to 0x[0-9a-f]+ '
                    r'of (?P<size>\d+) bytes by (?P<who>task \d+|interrupt) on cpu \d+:$')
FRAME = re.compile(r'^ (?P<func>[^ +]+)\+0x[0-9a-f]+/0x[0-9a-f]+(?: \[(?P<mod>[^\]]+)\])?')
OFFSET = re.compile(r'\+0x[0-9a-f]+/0x[0-9a-f]+')
TEST_MODS = re.compile(r'^rkdapl_')
SEP = '=' * 66


def helpers(top):
    """Names of the RDMA layer's own C helpers (rust/helpers/rdma.c)."""
    try:
        with open(os.path.join(top, 'rust/helpers/rdma.c')) as f:
            return set(re.findall(r'\b(rust_helper_\w+)\s*\(', f.read()))
    except OSError:
        return set()


def owner(frame, own_helpers):
    func, mod = frame
    if mod == 'rkdapl' or '6kernel4rdma' in func or func in own_helpers:
        return 'rkdapl'
    if mod and TEST_MODS.match(mod):
        return 'rkdapl-test'
    return None


def access_owner(stack, own_helpers):
    """Whose code made an access: its top frame's, or, for a kernel helper the Rust code
    called (rust_helper_*), its caller's."""
    if not stack:
        return None
    o = owner(stack[0], own_helpers)
    if o is None and stack[0][0].startswith('rust_helper_') and len(stack) > 1:
        o = owner(stack[1], own_helpers)
    return o


def parse(path):
    """Reports in one log: dicts with title, kind, accesses [(type, size, who, stack)],
    value change, text, and whether it came before the harness started."""
    try:
        with open(path, errors='replace') as f:
            lines = [TS.sub('', l.rstrip('\n')) for l in f]
    except OSError:
        return None, {}
    reports, info, started = [], {}, False
    i = 0
    while i < len(lines):
        l = lines[i]
        if 'rkdapl: harness start' in l:
            started = True
        m = re.search(r'kcsan: selftest: (\d+)/(\d+) tests passed', l)
        if m:
            info['selftest'] = m.group(1, 2)
        if 'kcsan: enabled early' in l:
            info['enabled'] = True
        m = re.match(r'^(setup_watchpoints|data_races|races_unknown_origin|no_capacity): (\d+)$', l)
        if m:
            info[m.group(1)] = int(m.group(2))
        m = re.match(r'^/sys/module/kcsan/parameters/(skip_watch):(\d+)$', l)
        if m:
            info[m.group(1)] = int(m.group(2))
        m = TITLE.search(l)
        if not m:
            i += 1
            continue
        rep = {'kind': m.group('kind'), 'title': OFFSET.sub('', m.group(0)).strip(),
               'boot': not started, 'accesses': [], 'change': '', 'text': [l]}
        cur = None
        i += 1
        while i < len(lines) and not lines[i].startswith(SEP) and not TITLE.search(lines[i]):
            t = lines[i]
            rep['text'].append(t)
            a = ACCESS.match(t)
            f = FRAME.match(t)
            if a:
                cur = {'type': a.group('type'), 'size': int(a.group('size')),
                       'who': a.group('who'), 'unknown': bool(a.group('unknown')), 'stack': []}
                rep['accesses'].append(cur)
            elif f and cur is not None:
                cur['stack'].append((f.group('func'), f.group('mod')))
            elif not t.strip():
                cur = None
            elif t.startswith('value changed:'):
                rep['change'] = t
            i += 1
        reports.append(rep)
    return reports, info


def demangle(names):
    if not names or not shutil.which('c++filt'):
        return {}
    out = subprocess.run(['c++filt'], input='\n'.join(names) + '\n', capture_output=True,
                         text=True).stdout.splitlines()
    return {n: d for n, d in zip(names, out) if d != n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--top', default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument('--summary')
    ap.add_argument('logs', nargs='+', metavar='ROLE=LOG[,LOG...]')
    args = ap.parse_args()
    own = helpers(args.top)
    races, order, taps, bad, counters = {}, [], [], 0, []
    for spec in args.logs:
        role, _, files = spec.partition('=')
        seen, info = {}, {}
        for path in files.split(','):
            reps, inf = parse(path)
            if reps is None:
                continue
            for k, v in inf.items():
                info.setdefault(k, v)
            counts = {}
            for r in reps:
                counts[r['title']] = counts.get(r['title'], 0) + 1
                if r['title'] not in races:
                    races[r['title']] = dict(r, guests={}, boot_only=True)
                    order.append(r['title'])
                races[r['title']]['boot_only'] &= r['boot']
            # The same report is in both the dmesg dump and the console: count it once.
            for t, c in counts.items():
                seen[t] = max(seen.get(t, 0), c)
        for t, c in seen.items():
            races[t]['guests'][role.upper()] = c
        st = info.get('selftest')
        nrep = sum(seen.values())
        counters.append((role.upper(), info, nrep))
        if info.get('enabled') and st and st[0] == st[1]:
            extra = ''
            if 'skip_watch' in info:
                extra += f", skip_watch {info['skip_watch']}"
            if 'setup_watchpoints' in info:
                # data_races counts every access caught on a watchpoint; non-strict KCSAN
                # reports only those where the watched value changed.
                extra += (f", {info['setup_watchpoints']} watchpoints set up, "
                          f"{info.get('data_races', 0)} racing access(es) caught, {nrep} reported")
            taps.append(f'ok - KCSAN active in guest {role.upper()} '
                        f'(self-test {st[0]}/{st[1]}{extra})')
        else:
            bad = 1
            taps.append(f'not ok - KCSAN active in guest {role.upper()} # enabled: '
                        f"{'yes' if info.get('enabled') else 'not seen'}, self-test: "
                        f"{'/'.join(st) if st else 'not seen'} in {files}")

    for t in order:
        r = races[t]
        owners = [access_owner(a['stack'], own) for a in r['accesses']]
        anywhere = {owner(fr, own) for a in r['accesses'] for fr in a['stack']} - {None}
        if 'rkdapl' in owners:
            r['where'] = 'rkdapl'
        elif 'rkdapl-test' in owners:
            r['where'] = 'rkdapl-test'
        elif anywhere:
            r['where'] = 'via-rkdapl'
        else:
            r['where'] = 'elsewhere'
    where_rank = {'rkdapl': 0, 'rkdapl-test': 1, 'via-rkdapl': 2, 'elsewhere': 3}
    order.sort(key=lambda t: where_rank[races[t]['where']])
    for t in order:
        r = races[t]
        g = ', '.join(f'{n} report(s) in guest {k}' for k, n in sorted(r['guests'].items()))
        boot = ', at boot before the harness' if r['boot_only'] else ''
        taps.append(f"not ok - KCSAN {t[len('BUG: KCSAN: '):]} [{r['where']}] "
                    f"# TODO finding: {g}{boot}")

    if args.summary:
        names = sorted({fr[0] for r in races.values() for a in r['accesses'] for fr in a['stack']}
                       | {fr for t in races for fr in re.split(r' / | in |\s\[', t)})
        dem = demangle([n for n in names if n.startswith('_R')])
        with open(args.summary, 'w') as f:
            f.write(f'# KCSAN findings: {len(order)} distinct race(s)\n')
            counts = {}
            for t in order:
                counts[races[t]['where']] = counts.get(races[t]['where'], 0) + 1
            f.write('# ' + ', '.join(f'{n} {w}' for w, n in counts.items()) + '\n' if counts else '')
            for role, info, nrep in counters:
                f.write(f'# guest {role}: KCSAN counters ' + (', '.join(
                    f'{k} {info[k]}' for k in ('skip_watch', 'setup_watchpoints', 'data_races',
                                               'races_unknown_origin', 'no_capacity')
                    if k in info) or 'not found') + f'; {nrep} report(s) in the logs\n')
            f.write('# (data_races counts every access caught on a watchpoint; non-strict KCSAN '
                    'reports one only if the watched value changed)\n')
            for n, t in enumerate(order, 1):
                r = races[t]
                f.write(f"\n## {n}. [{r['where']}] {t}\n")
                f.write('   reports: ' + ', '.join(f'guest {k}: {c}' for k, c in
                                                   sorted(r['guests'].items())))
                f.write(' (all at boot, before the harness)\n' if r['boot_only'] else '\n')
                for a in r['accesses']:
                    f.write(f"   {'unknown origin vs. ' if a['unknown'] else ''}{a['type']}, "
                            f"{a['size']} bytes, by {a['who']}:\n")
                    for func, mod in a['stack'][:12]:
                        d = dem.get(func)
                        f.write(f"      {func}{' [' + mod + ']' if mod else ''}"
                                f"{'  = ' + d if d else ''}\n")
                if r['change']:
                    f.write(f"   {r['change']}\n")
                f.write('   first report:\n')
                f.write(''.join(f'   | {l}\n' for l in r['text']))
    print('\n'.join(taps))
    return bad


if __name__ == '__main__':
    sys.exit(main())
