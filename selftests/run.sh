#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# `make check`: rkdapl's selftests in QEMU guests, as one KTAP stream on stdout.
#
#   [T=<suite>[,<suite>...]] [SEED=N] [KERNEL=debian] selftests/run.sh [--one]
#
# Builds the modules (scripts/modules.sh, the kernel first if needed) while Debian's stock
# kernel is set up beside it, then two boots of two guests (qemu/run-guests.sh). First the
# debug kernel (FLAVOUR): guest A (selftests/guest-a.sh) and guest B (selftests/guest-b.sh) run
# their steps of the suites in selftests/suites.sh. Meanwhile the host tests make patches
# (selftests/patches.sh, at the lowest priority). Then Debian's stock kernel (scripts/debian.sh:
# its own vmlinuz and modules, rkdapl's modules built for it) runs the suites that need no
# debug options (RKDAPL_SUITES=stock), their tests named "stock: ...". Then the host-side
# layout checks. --one boots only guest A (no two-guest steps); RKDAPL_STOCK_CHECK=0 leaves the
# stock kernel out, RKDAPL_PATCHES_CHECK=0 the test of make patches (both run only with
# FLAVOUR=debug).
#
# T= runs only the suites named (guest suites and the host-side hygiene, layout, patches and
# install), in one boot: one guest, or two if a chosen suite has a two-guest step; with
# KERNEL=debian on the stock kernel instead of the debug one. SEED=N is the fuzz suite's seed.
#
# The install suite (with the stock kernel: a whole run, or T=install,... KERNEL=debian) installs
# rkdapl with DKMS for the stock kernel in its chroot (scripts/dkms-test.sh, beside the debug
# guests); the stock guests then load rkdapl with modprobe from that install
# (RKDAPL_PROVIDER=modprobe, RKDAPL_STOCK_MODROOT) instead of insmod from out/debian/build.
#
# Adds one test per guest for the kernel splat scan of its dmesg and one for the guest run
# itself, and the KUnit cases each guest copied out, parsed by the kernel's KTAP parser
# (selftests/kunit-results.py); prints every result (KTAP version 1, the plan first), the
# totals, and a last line "N passed, N failed" (", N skipped" when any were). Exits non-zero
# if a test failed or a guest run failed or timed out.
#
# FLAVOUR=kcsan (the debug kernel with KCSAN instead of KASAN, qemu/kcsan.config) implies --one
# and adds, from qemu/kcsan-scan.py, one test per guest that KCSAN was on and one TODO line
# per distinct data race ("not ok - KCSAN data-race in f / g [where] # TODO finding: ..."):
# findings, counted apart, not failures; every race in full in $RKDAPL_OUT/kcsan.txt.
#
# Env: FLAVOUR (debug|release|kcsan), RKDAPL_OUT (log dir, default out/check-<timestamp>),
# RKDAPL_TIMEOUT (seconds per guest, default 4200: TCG guests are slow when the host is busy;
# with an empty cache the debug guests share the cores with the patch series' first build and
# run past 3300 s, and a hang found at 4200 s still leaves a warm run's summary inside 90 min)
# and run-guests.sh's other RKDAPL_* settings.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"
t0=$(date +%s)

one=0
[ "${1:-}" = --one ] && one=1
flavour=${FLAVOUR:-debug}
# T=<suite>[,<suite>...] (make check T=fuzz SEED=N): only those suites (selftests/suites.sh),
# in one boot: one guest, or two if one of them has a two-guest step; on the debug kernel, or
# with KERNEL=debian on the stock one. The host-side checks are suites too (HOST_SUITES in
# selftests/suites.sh): hygiene, layout and patches. SEED=N gives the fuzz suite its seed.
. "$top/selftests/suites.sh"
suite_names
host_suites=$HOST_SUITES
all_suites="$REPLY $host_suites"
export RKDAPL_T=${T:-}
[ -n "${SEED:-}" ] && export RKDAPL_FUZZ_SEEDS=$SEED
# host_selected NAME: true if the host-side check NAME runs in this run.
host_selected() { [ -z "${T:-}" ] || [[ ",$T," == *",$1,"* ]]; }
guest_t=
if [ -n "$RKDAPL_T" ]; then
	for s in ${RKDAPL_T//,/ }; do
		[[ " $all_suites " == *" $s "* ]] || die "T=$RKDAPL_T: no suite '$s' (the suites: $all_suites)"
		[[ " $host_suites " == *" $s "* ]] || guest_t+="${guest_t:+,}$s"
	done
	export RKDAPL_T=$guest_t
	[[ ",$T," == *,install,* ]] && [ "${KERNEL:-}" != debian ] &&
		die "T=$T: the install suite installs rkdapl for Debian's stock kernel: add KERNEL=debian"
	# Two guests only if a chosen suite has a two-guest step.
	one=1
	suite_pair "$guest_t" && one=0
fi
# KCSAN slows every C memory access: its run is the single-guest suites.
[ "$flavour" = kcsan ] && one=1

stock=0
[ "$flavour" = debug ] && [ "${RKDAPL_STOCK_CHECK:-1}" = 1 ] && stock=1
[ -n "${T:-}" ] && stock=0
[ -n "${T:-}" ] && [ "${KERNEL:-}" = debian ] && stock=1
debug=1
[ -n "${T:-}" ] && [ "${KERNEL:-}" = debian ] && debug=0
# A run of host-side suites only boots nothing; a run of the hygiene check alone builds nothing.
boot=1
[ -n "${T:-}" ] && [ -z "$guest_t" ] && boot=0
[ "${T:-}" = hygiene ] && debug=0 stock=0
lines=() diag=()
# The committed files' SPDX lines, paths and issue numbers (selftests/hygiene.sh), first: seconds.
if host_selected hygiene; then
	while IFS= read -r l; do
		lines+=("$l")
	done < <("$top/selftests/hygiene.sh" "$top")
fi
# The stock kernel's set-up (Debian's packages downloaded and unpacked, a trixie debootstrap,
# the tree prepared) runs while the debug kernel builds, and is waited for after it. Its
# downloads overlap the build; its modules_prepare competes with it for the CPU. On a warm
# cache it returns at once.
stock_pid= patches_pid= install_pid=
# Background jobs do not outlive the run.
trap 'kill $stock_pid $patches_pid $install_pid 2>/dev/null' EXIT
if [ $stock = 1 ]; then
	stock_out=$(mktemp)
	"$top/scripts/debian.sh" kernel > "$stock_out" &
	stock_pid=$!
fi
if [ $debug = 1 ]; then
	kdir=$("$top/scripts/modules.sh" "$flavour" | tail -n 1) || die "scripts/modules.sh failed"
	for f in rkdapl.ko rkdapl_rust_sample.ko selftests/kmod/rkdapl_test.ko samples/rkdapl_rping.ko; do
		[ -f "$top/$f" ] || die "no $f after scripts/modules.sh"
	done
fi
if [ $stock = 1 ]; then
	wait "$stock_pid" || { stock_pid=; die "scripts/debian.sh kernel failed"; }
	stock_pid=
	stockdir=$(tail -n 1 "$stock_out")
	rm -f "$stock_out"
	"$top/scripts/debian.sh" modules > /dev/null || die "scripts/debian.sh modules failed"
fi

# The kernel tree's tools: kunit_parser.py (selftests/kunit-results.py).
ksrc=$("$top/scripts/kernel-source.sh") || die "scripts/kernel-source.sh failed"
export RKDAPL_OUT=${RKDAPL_OUT:-$top/out/check-$(date +%Y%m%d-%H%M%S)}
export RKDAPL_TIMEOUT=${RKDAPL_TIMEOUT:-4200}
export RKDAPL_PAIR=$((1 - one))
# KCSAN: a dmesg ring large enough to keep its (long) reports until the final dump, and ten times
# the kernel config's watchpoints (one access in up to 400 per CPU, not 4000): the single-guest
# suites take ~110 s under KCSAN, so sampling denser costs little. RKDAPL_APPEND comes last and
# can set kcsan.skip_watch again (the last value wins).
[ "$flavour" = kcsan ] &&
	export RKDAPL_APPEND="log_buf_len=8M kcsan.skip_watch=400${RKDAPL_APPEND:+ $RKDAPL_APPEND}"
out=$RKDAPL_OUT
mkdir -p "$out"
# The first consumers (samples/first/, the suite first), built as a user builds them: out of tree,
# each by its own Makefile, after a make clean (Kbuild does not see that rkdapl's Module.symvers or
# crate metadata changed); for the debug kernel in the worktree, for the stock one in its build
# copy through scripts/debian.sh make (in the chroot). A result each; the guests load what they
# built (selftests/first.sh), a missing module failing there too.
# first_build PREFIX DIR COMMAND...: runs COMMAND (which builds DIR), logs in $out/first-build.log.
first_build() {
	local pre=$1 dir=$2 name=${2##*/samples/} ko rc=0
	shift 2
	ko=rkdapl_first$([ "${dir##*/}" = rust ] && echo _rust).ko
	rm -f "$dir/$ko"
	echo "== $pre$name: $*" >> "$out/first-build.log"
	"$@" clean modules >> "$out/first-build.log" 2>&1 || rc="exit $?"
	[ "$rc" = 0 ] && [ ! -f "$dir/$ko" ] && rc="no $ko"
	if [ "$rc" = 0 ]; then
		lines+=("ok - ${pre}first: $name/$ko builds out of tree with its own Makefile")
	else
		lines+=("not ok - ${pre}first: $name/$ko builds out of tree with its own Makefile # $rc, see $out/first-build.log")
	fi
}
if [ $boot = 1 ] && host_selected first; then
	for d in c rust; do
		[ $debug = 1 ] && first_build "" "$top/samples/first/$d" make -s -C "$top/samples/first/$d"
		[ $stock = 1 ] && first_build "stock: " "$top/out/debian/build/samples/first/$d" \
			"$top/scripts/debian.sh" make "$top/out/debian/build/samples/first/$d"
	done
fi
roles="a b"
[ $one = 1 ] && roles=a
st=0

# guests <name prefix> <log dir>: one boot of the guests (the kernel comes from the environment,
# see qemu/run-guests.sh), then their TAP lines, renumbered into one stream, prefixed, and the
# harness' own tests, appended to lines[].
guests() {
	local pre=$1 o=$2 r R l dm scan nb sync=$2/sync rc=0
	log "check: booting guest$([ $one = 0 ] && echo "s A and B" || echo " A")${pre:+ ($pre kernel)}, logs in $o"
	if [ $one = 1 ]; then
		RKDAPL_OUT=$o "$top/qemu/run-guests.sh" --one "$top/selftests/guest-a.sh" >&2 || rc=$?
	else
		RKDAPL_OUT=$o "$top/qemu/run-guests.sh" "$top/selftests/guest-a.sh" \
			"$top/selftests/guest-b.sh" >&2 || rc=$?
	fi
	[ $rc = 0 ] || st=$rc
	# Each step's time, for the next run's estimates (selftests/suites.sh suite_run).
	for r in $roles; do
		[ -s "$sync/times-$r.txt" ] || continue
		mkdir -p "${RKDAPL_TIMES%/*}"
		# This run's times first: sort -u keeps the first line of each step.
		touch "$RKDAPL_TIMES-$r.txt"
		sort -u -k1,1 "$sync/times-$r.txt" "$RKDAPL_TIMES-$r.txt" > "$RKDAPL_TIMES-$r.new" &&
			mv "$RKDAPL_TIMES-$r.new" "$RKDAPL_TIMES-$r.txt"
	done
	pre=${pre:+$pre: }
	for r in $roles; do
		R=${r^^}
		if [ -s "$sync/tap-$r.txt" ]; then
			while IFS= read -r l; do
				case $l in
				"ok "* | "not ok "*) lines+=("$(sed -E "s/^(not ok|ok) [0-9]+ - /\1 - $pre/" <<< "$l")") ;;
				esac
			done < "$sync/tap-$r.txt"
		else
			lines+=("not ok - ${pre}guest $R produced TAP results # no $sync/tap-$r.txt")
		fi
		# The KUnit suites' KTAP the guest copied out, through the kernel's own parser.
		if [ -d "$sync/kunit-$r" ]; then
			if kl=$(python3 "$top/selftests/kunit-results.py" "$ksrc" "$sync/kunit-$r" 2> "$o/kunit-$r.err"); then
				while IFS= read -r l; do
					lines+=("${l/ok - /ok - $pre}")
				done <<< "$kl"
			else
				lines+=("not ok - ${pre}kunit: the KTAP of guest $R's suites parses # see $o/kunit-$r.err")
			fi
		fi
		# The script's exit status reflects the failed tests above; here only whether it ended.
		if [ -s "$sync/rc-$r" ]; then
			lines+=("ok - ${pre}guest $R script finished (exit $(cat "$sync/rc-$r"))")
		else
			lines+=("not ok - ${pre}guest $R script finished # no exit status: hang or crash, see $o/guest-$r.log and console-$r.log")
		fi
		dm=$o/dmesg-$r.txt
		[ -s "$dm" ] || dm=$o/console-$r.log
		if [ ! -s "$dm" ]; then
			lines+=("not ok - ${pre}splat scan guest $R # no dmesg or console log")
		elif scan=$("$top/qemu/splat-scan.sh" "$dm" 2>&1); then
			nb=$(grep -c '^# boot-time' <<< "$scan")
			if [ "$nb" = 0 ]; then
				lines+=("ok - ${pre}splat scan guest $R")
			else
				lines+=("ok - ${pre}splat scan guest $R (and $nb boot-time line(s) before the harness, not counted: see below)")
				diag+=("$(grep '^# boot-time' <<< "$scan" | head -5)")
			fi
		else
			lines+=("not ok - ${pre}splat scan guest $R # $(grep -c '^# /' <<< "$scan") splat line(s) in $dm")
			diag+=("$(grep '^# /' <<< "$scan" | head -40)")
		fi
	done
	# run-guests.sh fails on a failed script, a hang or a splat; the lines above say which.
	# (grep -c reads all its input: grep -q stops early, and under pipefail the writer's SIGPIPE
	# made the pipeline fail, adding this line when another one already said what failed.)
	if [ $rc != 0 ] && [ "$(printf '%s\n' "${lines[@]}" | grep -v ' # TODO ' | grep -c '^not ok')" = 0 ]; then
		lines+=("not ok - ${pre}qemu/run-guests.sh # exit $rc")
	fi
}

# The install suite (host-side: DKMS and make install in the stock kernel's chroot) beside the
# debug guests, at the lowest priority; its module root is then the stock guests'.
if [ $stock = 1 ] && host_selected install; then
	log "check: install (DKMS, make install) for the stock kernel, beside the guests (scripts/debian.sh dkms-test, log in $out/install.log)"
	nice -n 19 "$top/scripts/debian.sh" dkms-test > "$out/install.tap" 2> "$out/install.log" &
	install_pid=$!
fi
# make patches and its build (host-side, CPU-bound) runs beside the debug guests, at the lowest
# priority: the TCG guests leave about a third of the host's CPU time idle (they wait on the
# network and on each other), and the build takes it. With the debug flavour only.
if [ "$flavour" = debug ] && [ "${RKDAPL_PATCHES_CHECK:-1}" = 1 ] && host_selected patches; then
	log "check: make patches and its build, beside the guests (selftests/patches.sh, log in $out/patches.log)"
	nice -n 19 "$top/selftests/patches.sh" > "$out/patches.tap" 2> "$out/patches.log" &
	patches_pid=$!
fi
[ $debug = 1 ] && [ $boot = 1 ] && RKDAPL_BUILD=$kdir RKDAPL_TIMES=$RKDAPL_CACHE/times/$flavour guests "" "$out"
# KCSAN: was it on in each guest, and the distinct races of all guests' logs (findings, TODO).
if [ "$flavour" = kcsan ]; then
	specs=()
	for r in $roles; do specs+=("$r=$out/dmesg-$r.txt,$out/console-$r.log"); done
	while IFS= read -r l; do
		[ -n "$l" ] && lines+=("$l")
	done < <(python3 "$top/qemu/kcsan-scan.py" --top "$top" --summary "$out/kcsan.txt" "${specs[@]}")
fi
stock_provider= stock_modroot=
if [ -n "$install_pid" ]; then
	wait "$install_pid"
	install_pid=
	ni=0
	while IFS= read -r l; do
		case $l in
		"ok "* | "not ok "*) lines+=("$l") ni=$((ni + 1)) ;;
		esac
	done < "$out/install.tap"
	[ $ni -gt 0 ] || lines+=("not ok - install: scripts/debian.sh dkms-test reported # see $out/install.log")
	# The stock guests modprobe rkdapl from what DKMS installed (and the stock modules).
	if compgen -G "$top/out/debian/dkms/guest/lib/modules/*/updates/dkms/rkdapl.ko*" > /dev/null; then
		stock_provider=modprobe stock_modroot=$top/out/debian/dkms/guest
	fi
fi
if [ $stock = 1 ] && [ $boot = 1 ]; then
	RKDAPL_PROVIDER=$stock_provider RKDAPL_STOCK_MODROOT=$stock_modroot \
		RKDAPL_STOCK=$stockdir/img RKDAPL_KO=$top/out/debian/build RKDAPL_SUITES=stock RKDAPL_KUNIT=0 \
		RKDAPL_TIMES=$RKDAPL_CACHE/times/stock guests stock "$out/stock"
fi
# The host-side checks.
if host_selected layout; then
	# Host-side: the provider's modules import each other one way (no import cycle).
	if graph=$(python3 "$top/scripts/modgraph.py" "$top/rust/rkdapl"); then
		lines+=("ok - provider module graph has no import cycle")
	else
		lines+=("not ok - provider module graph has no import cycle # $(tail -1 <<< "$graph")")
	fi
	# Host-side: libclang (the layer's bindings) and each kernel's C compiler lay out the RDMA
	# structs the layer uses alike (selftests/layout, built with the modules).
	[ $debug = 1 ] && lines+=("$("$top/selftests/layout.sh" "$top" "debug kernel $(basename "$kdir")")")
	[ $stock = 1 ] && lines+=("$("$top/selftests/layout.sh" "$top/out/debian/build" "Debian 7.3.4+deb13-amd64")")
	# Host-side: the modules built for the stock kernel fit it: its vermagic, and every symbol they
	# use is exported by the kernel (Debian's Module.symvers) or by rkdapl.ko.
	if [ $stock = 1 ]; then
		krel=${stockdir##*/} bad=() nko=0
		exports=$(cat "$stockdir"/img/usr/src/linux-headers-"$krel"/Module.symvers \
			"$top/out/debian/build/Module.symvers" | cut -f2 | sort -u)
		for k in "$top"/out/debian/*.ko; do
			nko=$((nko + 1))
			[ "$(modinfo -F vermagic "$k")" = "$krel SMP preempt mod_unload " ] ||
				bad+=("${k##*/}: vermagic '$(modinfo -F vermagic "$k")'")
			while read -r s; do
				bad+=("${k##*/}: $s")
			done < <(nm -u "$k" | awk '{ print $2 }' | sort -u | comm -23 - <(echo "$exports"))
		done
		if [ $nko -gt 0 ] && [ ${#bad[@]} = 0 ]; then
			lines+=("ok - stock: $nko modules have vermagic '$krel SMP preempt mod_unload' and use only symbols the kernel or rkdapl.ko exports")
		else
			lines+=("not ok - stock: modules fit $krel # ${nko} modules; ${bad[*]:0:5}")
		fi
	fi
fi
# Host-side: make patches writes a checkpatch-clean series that applies to the pristine source
# with git am and of which every patch builds (selftests/patches.sh; its build is cached by the
# series' diffs). Started above, beside the guests.
if [ -n "$patches_pid" ]; then
	wait "$patches_pid"
	patches_pid=
	np=0
	while IFS= read -r l; do
		case $l in
		"ok "* | "not ok "*) lines+=("$l") np=$((np + 1)) ;;
		esac
	done < "$out/patches.tap"
	[ $np -gt 0 ] || lines+=("not ok - patches: selftests/patches.sh reported # see $out/patches.log")
fi

# The whole run as one KTAP version 1 stream (Documentation/dev-tools/ktap.rst): the plan first,
# one result per test ("ok N - name", "not ok N - name # reason", "ok N - name # SKIP reason"),
# kselftest's totals line, and last "N passed, N failed" (", N skipped" when any were). A skip
# is never a pass; a KCSAN finding is a TODO, counted apart.
pass=0 fail=0 skip=0 todo=0 n=0
echo "KTAP version 1"
echo "1..${#lines[@]}"
for l in "${lines[@]}"; do
	n=$((n + 1))
	echo "${l/ok - /ok $n - }"
	case $l in
	"ok "*" # SKIP"*) skip=$((skip + 1)) ;;
	"ok "*) pass=$((pass + 1)) ;;
	"not ok - KCSAN "*" # TODO "*) todo=$((todo + 1)) ;;
	*) fail=$((fail + 1)) ;;
	esac
done
[ "$flavour" = kcsan ] &&
	echo "# KCSAN: $todo distinct data race(s) (TODO lines above, not counted as failures): $out/kcsan.txt"
for d in "${diag[@]+"${diag[@]}"}"; do
	echo "$d"
done
echo "# logs in $out, $(($(date +%s) - t0)) s"
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
echo "$pass passed, $fail failed$([ $skip -gt 0 ] && echo ", $skip skipped")"
[ $fail = 0 ] && [ $st = 0 ]
