#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sourced INSIDE a guest by selftests/guest-{a,b}.sh (run by qemu/run-guests.sh).
# Records TAP lines "ok N - <suite>: <name>" / "not ok N - <suite>: <name> # <reason>" in
# $RKDAPL_SYNC/tap-<role>.txt (numbered per guest) and echoes them.
#
#   t_ok NAME / t_fail NAME REASON / t_check RC NAME REASON / t_skip NAME REASON   one test
#   run_kmod SUITE TIMEOUT -- ARGS...   insmod rkdapl_test.ko ARGS; its dmesg TAP lines
#                            become "<suite>: <name>" tests, plus "<suite>: module run completed"
#   kunit_suite              the KUnit cases that ran (at boot and at rkdapl.ko's insmod)
#   finish                   exit status: 0 if no test failed
#
# Programs start slowly in a TCG guest with its root on 9p, so the per-line work here uses
# shell builtins only.
. "$RKDAPL_TOP/qemu/guest-setup.sh" || exit 1

TOP=$RKDAPL_TOP
# The modules under test: this tree's build, or another tree of the same layout (RKDAPL_KO:
# out/debian/build for Debian's stock kernel, see qemu/run-guests.sh).
KO=${RKDAPL_KO:-$TOP}
TESTKO=$KO/selftests/kmod/rkdapl_test.ko
TAP=$RKDAPL_SYNC/tap-$RKDAPL_ROLE.txt
: > "$TAP"
TAPN=0
# The RDMA device the suites use, and a prefix for their test names: selftests/transport.sh
# runs the suites again over siw0 with RKDAPL_DEV=siw0 TAP_PREFIX="siw: ".
RKDAPL_DEV=${RKDAPL_DEV:-rxe0}
TAP_PREFIX=${TAP_PREFIX:-}

# Recounts the results in $TAP (a background run_kmod may have added some). mapfile reads the
# file in large chunks; `while read` would cost a 9p round trip per line.
_tap_sync() {
	local l
	local -a all
	TAPN=0
	mapfile -t all < "$TAP"
	for l in "${all[@]}"; do
		case $l in "ok "* | "not ok "*) TAPN=$((TAPN + 1)) ;; esac
	done
}
_tap() { # "ok - name" / "not ok - name # reason"
	local l
	TAPN=$((TAPN + 1))
	l=${1/ok - /ok $TAPN - $TAP_PREFIX}
	printf '%s\n' "$l" >> "$TAP"
	printf '%s\n' "$l"
}
# A progress line with the seconds since the script started (builtin clock).
_log() { printf 'rkdapl-selftest: [%4ds] %s\n' "$SECONDS" "$*"; }
t_ok() { _tap_sync; _tap "ok - $1"; }
t_fail() { _tap_sync; _tap "not ok - $1 # ${2:-failed}"; }
# A test that cannot run here (a skip is never a pass: selftests/run.sh counts it apart).
t_skip() { _tap_sync; _tap "ok - $1 # SKIP $2"; }
# suite_selected NAME: true if NAME runs in this boot (every suite does without T=).
suite_selected() { [ -z "${RKDAPL_T:-}" ] || [[ ",$RKDAPL_T," == *",$1,"* ]]; }
t_check() { # rc name reason
	if [ "$1" = 0 ]; then t_ok "$2"; else t_fail "$2" "${3:-exit $1}"; fi
}

module_loaded() { [ -d "/sys/module/$1" ]; }

# run_kmod SUITE TIMEOUT -- insmod-args...
run_kmod() {
	local suite=$1 tmo=$2 mark=0 rc=0 l got=0 done=0 failed=0 ok reason buf= t0
	local -a lines
	shift 3
	_tap_sync
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"rkdapl_test: "* ]] && mark=$((mark + 1)); done
	_log "$suite: insmod rkdapl_test.ko $*"
	t0=$SECONDS
	timeout -s TERM -k 30 "$tmo" insmod "$TESTKO" "$@" &
	echo $! > "/run/rkdapl-test-insmod-$suite.pid"
	wait $! || rc=$?
	_log "$suite: insmod returned $rc after $((SECONDS - t0)) s"
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do
		[[ $l == *"rkdapl_test: "* ]] || continue
		if [ $mark -gt 0 ]; then
			mark=$((mark - 1))
			continue
		fi
		l=${l#*rkdapl_test: }
		if [[ $l =~ ^(not\ ok|ok)\ [0-9]+\ -\ (.*)$ ]]; then
			got=$((got + 1))
			ok=${BASH_REMATCH[1]}
			[ "$ok" = ok ] || failed=1
			TAPN=$((TAPN + 1))
			buf+="$ok $TAPN - $TAP_PREFIX$suite: ${BASH_REMATCH[2]}"$'\n'
		elif [[ $l == "#"* ]]; then
			[[ $l == "# done "* ]] && done=1
			_log "$suite: $l"
		fi
	done
	# One write: the file is on the host (9p) and every write is a round trip.
	printf '%s' "$buf" >> "$TAP"
	printf '%s' "$buf"
	if [ $done = 1 ] && [ $got -gt 0 ]; then
		# insmod returns 0 iff every test of the run passed (the module stays loaded).
		reason="insmod exit $rc"
		[ $rc = 124 ] && reason="insmod timed out after $tmo s"
		[ $rc = 143 ] && reason="insmod stopped (SIGTERM)"
		if [ $failed = 1 ]; then [ $rc != 0 ]; else [ $rc = 0 ]; fi
		t_check $? "$suite: module run completed, insmod status matches" "$reason"
	else
		t_fail "$suite: module run completed" \
			"insmod exit $rc, $got results, no '# done' line (crash or hang? see dmesg)"
	fi
	module_loaded rkdapl_test && rmmod rkdapl_test
	_log "$suite: done"
	return $rc
}

# kunit_suite: the KUnit results of this guest. KUnit keeps each suite's KTAP in its debugfs,
# /sys/kernel/debug/kunit/<suite>/results: one directory per suite that ran, a module's when it
# was loaded, until its unload (see qemu/run-guests.sh RKDAPL_KUNIT). They are copied to
# $RKDAPL_SYNC/kunit-<role>/<suite>.ktap, and the host parses them with the kernel's KTAP parser
# (selftests/kunit-results.py: one test per case, "kunit: <suite>: <case>"). Here one test:
# rkdapl.ko reported every suite of its .kunit_test_suites section (8 bytes per suite: its
# rkdapl_* suites and the RDMA layer's rust_kernel_rdma*), so that a suite filtered out by a
# wrong glob cannot pass by not running. Call it once, with rkdapl.ko loaded. With KUnit off
# (RKDAPL_KUNIT=0) it records one skipped test.
kunit_suite() {
	local f l suite cmd want=0 got=0 dir=/sys/kernel/debug/kunit to=$RKDAPL_SYNC/kunit-$RKDAPL_ROLE
	local -a lines
	read -r cmd < /proc/cmdline
	if [[ " $cmd " == *" kunit.enable=0 "* ]]; then
		t_skip "kunit: rkdapl.ko ran its suites at insmod" "KUnit is off (kunit.enable=0)"
		return 0
	fi
	mkdir -p "$to"
	for f in "$dir"/*/results; do
		[ -r "$f" ] || continue
		suite=${f%/results}
		suite=${suite##*/}
		[[ $suite == rkdapl_* || $suite == rust_kernel_rdma* ]] && got=$((got + 1))
		cp "$f" "$to/$suite.ktap"
	done
	mapfile -t lines < <(objdump -h "$KO/rkdapl.ko")
	for l in "${lines[@]}"; do
		[[ $l =~ ^\ *[0-9]+\ \.kunit_test_suites\ +([0-9a-f]+)\  ]] &&
			want=$(( 0x${BASH_REMATCH[1]} / 8 ))
	done
	[ "$want" -gt 0 ] && [ "$got" = "$want" ]
	t_check $? "kunit: rkdapl.ko ran its $want suites at insmod" \
		"$got of rkdapl.ko's suite(s) in $dir, $want in its .kunit_test_suites"
}

# rkdapl.ko from the tree under test (insmod), or, with RKDAPL_PROVIDER=modprobe, the one
# installed in the module root (make check's install suite: DKMS's updates/dkms/rkdapl.ko.xz,
# loaded by modprobe with the stock modules it depends on).
load_provider() {
	local rc=0 dep
	if [ "${RKDAPL_PROVIDER:-}" = modprobe ]; then
		dep=$(modprobe -d "$RKDAPL_MODROOT" --show-depends rkdapl 2>&1)
		dep=${dep##*$'\n'}
		[[ $dep == "insmod "*/updates/dkms/rkdapl.ko* ]] || rc=98
		[ $rc = 0 ] && { rkdapl_modprobe rkdapl || rc=$?; }
		[ $rc = 0 ] && ! module_loaded rkdapl && rc=99
		t_check $rc "module: modprobe rkdapl loads the installed updates/dkms/rkdapl.ko" \
			"rc $rc, modprobe --show-depends: ${dep:-nothing}"
	else
		insmod "$KO/rkdapl.ko" || rc=$?
		[ $rc = 0 ] && ! module_loaded rkdapl && rc=99
		t_check $rc "module: load rkdapl.ko" "insmod exit $rc"
	fi
	[ $rc = 0 ]
}

# rmmod rkdapl must be refused while a consumer module holds it.
check_refcount() {
	local rc=0
	if ! insmod "$TESTKO" role=none; then
		t_fail "module: rmmod rkdapl refused while rkdapl_test is loaded" \
			"insmod rkdapl_test.ko role=none failed"
		return
	fi
	rmmod rkdapl 2>/dev/null && rc=1
	module_loaded rkdapl || rc=2
	t_check $rc "module: rmmod rkdapl refused while rkdapl_test is loaded" \
		"rmmod rkdapl succeeded (rc $rc)"
	rmmod rkdapl_test
	t_check $? "module: rmmod rkdapl_test"
}

unload_provider() {
	local rc=0
	module_loaded rkdapl_test && rmmod rkdapl_test
	rmmod rkdapl || rc=$?
	module_loaded rkdapl && [ $rc = 0 ] && rc=99
	t_check $rc "module: unload rkdapl" "rmmod exit $rc"
	# rkdapl warns if objects were still open at its unload (none may be: consumers free them,
	# or rkdapl does when a consumer goes).
	local l n=0
	local -a lines
	mapfile -t lines < <(dmesg)
	for l in "${lines[@]}"; do [[ $l == *"rkdapl: unloading with"* ]] && n=$((n + 1)); done
	[ $n = 0 ]
	t_check $? "module: no rkdapl object was left open at its unload" "$n 'unloading with ... objects still open' lines"
}

finish() {
	local l p=0 f=0
	local -a all
	mapfile -t all < "$TAP"
	for l in "${all[@]}"; do
		case $l in "ok "*) p=$((p + 1)) ;; "not ok "*) f=$((f + 1)) ;; esac
	done
	echo "rkdapl-selftest: guest $RKDAPL_ROLE: $p passed, $f failed"
	[ "$f" = 0 ]
}
