#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host side: boots guest A (10.77.0.1) and, unless --one, guest B (10.77.0.2)
# with virtme-ng over the host root (TCG), wired together by a QEMU socket
# netdev. Each guest runs qemu/guest-run.sh: guest-setup.sh, then its script.
# Guest output is shown prefixed [A]/[B] and saved under $RKDAPL_OUT; exits
# non-zero if a guest script fails, a guest hangs, or splat-scan.sh finds a
# kernel splat in the guests' dmesg.
#
#   qemu/run-guests.sh [--one] <guest-script-A> [<guest-script-B>]
#
# Env: RKDAPL_BUILD  kernel build dir (required), or
#      RKDAPL_STOCK  an unpacked distribution kernel (scripts/debian.sh: its usr/lib/modules/<ver>/
#                    holds vmlinuz and the modules) with RKDAPL_KO, the tree of modules built
#                    for it (out/debian/build); RKDAPL_STOCK_MODROOT, another module root for
#                    the guests' modprobe (selftests/run.sh: the stock modules with rkdapl's
#                    that DKMS installed, scripts/dkms-test.sh)
#      RKDAPL_OUT    log dir (default out/run-<timestamp>)
#      RKDAPL_MEM (1G), RKDAPL_CPUS (2), RKDAPL_TIMEOUT (900 s per guest),
#      RKDAPL_BOOT_TIMEOUT (300 s for a guest to reach its harness; see below)
#      RKDAPL_APPEND (extra kernel args), RKDAPL_KUNIT=rkdapl|all|0, RKDAPL_UDEV=1,
#      RKDAPL_QEMU_OPTS (extra QEMU options, e.g. make bench's -icount shift=0,sleep=off),
#      RKDAPL_KVM (auto: KVM if /dev/kvm works, see below; 0: always TCG; 1: KVM, no probe)
#      any other exported RKDAPL_* variable is passed to the guests.
# In the guest: RKDAPL_ROLE=a|b, RKDAPL_IP, RKDAPL_PEER_IP, RKDAPL_SYNC (shared
# rw dir for barriers and results), RKDAPL_TOP, RKDAPL_MODROOT, RKDAPL_KUNIT_GLOB.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"

args=("$@")
one=0
[ "${1:-}" = --one ] && { one=1; shift; }
[ $# = $((2 - one)) ] || die "usage: $0 [--one] <guest-script-A> [<guest-script-B>]"
if [ -n "${RKDAPL_STOCK:-}" ]; then
	# A distribution kernel builds 9p and virtio-net as modules: vng then puts the ones its root
	# needs in its initramfs (from the kernel's own modules directory) and links that directory
	# as the guest's /lib/modules/<ver>.
	build=$RKDAPL_STOCK
	kernel=$(ls "$build"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -n1)
	modroot=${RKDAPL_STOCK_MODROOT:-$build/usr}
	config=$(ls "$build"/usr/src/linux-headers-*/.config 2>/dev/null | head -n1)
	vng_mods=()
	: "${RKDAPL_KO:?RKDAPL_KO must name the modules built for $build}"
else
	build=${RKDAPL_BUILD:?RKDAPL_BUILD must name the kernel build dir}
	kernel=$build/arch/x86/boot/bzImage
	modroot=$build/modroot
	config=$build/.config
	vng_mods=(--skip-modules)
fi
[ -f "$kernel" ] || die "no kernel image in $build"
[ -d "$modroot/lib/modules" ] || die "no $modroot/lib/modules (modules_install)"
out=${RKDAPL_OUT:-$top/out/run-$(date +%Y%m%d-%H%M%S)}
sync=$out/sync
# The sync directory holds the guests' barrier files: one left by an earlier run would pass
# barriers that were never reached.
[ -z "$(ls -A "$sync" 2>/dev/null)" ] || die "$sync is not empty (an earlier run's); choose a new RKDAPL_OUT"
mkdir -p "$sync" && out=$(cd "$out" && pwd) && sync=$out/sync || die "cannot create $out"
tmo=${RKDAPL_TIMEOUT:-900}
# One set of guests at a time on this host: two TCG guests already use both cores, and runs
# started together (several developers' shells, make demo during make check) would all time out.
exec 9>"$RKDAPL_CACHE/guests.lock"
flock -n 9 || { log "another guest run holds $RKDAPL_CACHE/guests.lock, waiting"; flock 9; }
# The read-only host root is mounted cache=loose (vng's default, no cache, re-reads every binary
# over 9p on each exec: several times slower); the shared sync dir stays uncached.
# The kernel log holds a whole run (log_buf_len): the suites find their modules' lines in dmesg,
# and the config's 128 KiB (LOG_BUF_SHIFT=17) wraps within a make check once a long report (a
# lockdep or KASAN splat) is in it, after which a suite finds none of its lines.
kargs="rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose log_buf_len=8M ${RKDAPL_APPEND:-}"
# KASAN kernels boot with 4-level paging (no5lvl). vng's "-cpu max" offers LA57, and with
# 5-level paging a KASAN kernel's boot CPU, in identify_cpu(), clears its feature bits
# (X86_FEATURE_LA57 among them) and reads them back from CPUID. An interrupt in that window
# makes KASAN compute KASAN_SHADOW_START for 4-level paging, so the irq_desc lock of a
# 5-level direct-map address (0xff11...) is "not in the kernel": a false "BUG: KASAN:
# wild-memory-access in do_raw_spin_lock" from handle_edge_irq, which taints the kernel and
# turns lockdep off (and KASAN, one-shot, reports nothing more) for the whole run. Seen in
# ~1 TCG boot in 6; an upstream kernel bug: docs/testing.md "Boot-time KASAN false positive".
grep -qx 'CONFIG_KASAN=y' "$config" 2>/dev/null && kargs="no5lvl $kargs"
# KUnit. rkdapl.ko's suites (#[kunit_tests(rkdapl_*)] and the RDMA layer's rust_kernel_rdma)
# run when it is loaded (KUnit's module notifier, once the module's init returned), filtered by
# kunit.filter_glob (one glob, "suite_glob.test_glob", no alternatives). The boot-time glob
# matches no built-in suite (all Rust doctests cost minutes under TCG with KASAN);
# qemu/guest-run.sh then sets the glob to $RKDAPL_KUNIT_GLOB, which lets every suite of a module
# loaded later run (only rkdapl.ko has suites among the modules the guests load).
# RKDAPL_KUNIT=all runs every built-in suite at boot as well, RKDAPL_KUNIT=0 none at all.
kunit_glob=
case "${RKDAPL_KUNIT:-rkdapl}" in
	all) ;;
	0) kargs="kunit.enable=0 $kargs" ;;
	*) kargs="kunit.filter_glob=rkdapl_* $kargs"
		kunit_glob='*' ;;
esac

# KVM when it works, TCG otherwise. A /dev/kvm is not enough: on hosts whose CPU exposes no
# virtualisation, a KVM guest hangs after "Booting from ROM". So the first run after each host
# boot probes: a KVM guest that must print a line within 60 s. The answer is kept for the host's
# boot ($RKDAPL_CACHE/kvm-probe, keyed by its boot id). -icount (make bench) needs TCG.
accel=(--disable-kvm)
accel_name=TCG
kvm_works() {
	local f=$RKDAPL_CACHE/kvm-probe id o
	[ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
	read -r id < /proc/sys/kernel/random/boot_id
	if [ "$(head -n1 "$f" 2>/dev/null)" != "$id" ]; then
		log "probing KVM (a guest must boot within 60 s; the answer is kept until the host reboots)"
		o=$(timeout -k 5 60 "$VNG" -r "$kernel" "${vng_mods[@]}" --force-9p --memory 512M --cpus 1 \
			--append "$kargs" -- echo rkdapl-kvm-probe-ok 2>&1 < /dev/null)
		{ echo "$id"; grep -q rkdapl-kvm-probe-ok <<< "$o" && echo yes || echo no; } > "$f"
	fi
	[ "$(sed -n 2p "$f")" = yes ]
}
case ${RKDAPL_KVM:-auto} in
1) accel=() accel_name=KVM ;;
0) ;;
*) [[ ${RKDAPL_QEMU_OPTS:-} == *icount* ]] || ! kvm_works || accel=() accel_name=KVM ;;
esac
log "guests run under $accel_name"

# A free port on 127.0.0.1 for the wire (guest A listens, B connects).
while port=$((20000 + RANDOM % 40000)); [ -n "$(ss -Htln "sport = :$port")" ]; do :; done

# virtme-ng-init starts systemd-udevd when it finds one; under TCG with a debug kernel its
# coldplug and settle take minutes and nothing here needs udev. As root, each guest is started
# in a private mount namespace where an empty directory covers /usr/lib/systemd, so the guest
# (which sees the host root through QEMU's 9p export) finds no udevd. The host is unchanged.
hide_udev=
if [ "$(id -u)" = 0 ] && [ "${RKDAPL_UDEV:-0}" = 0 ]; then
	mkdir -p "$out/no-systemd"
	hide_udev="unshare -m --propagation private $top/qemu/hide-udev.sh $out/no-systemd"
fi

declare -A pid
# start_guest role ip peer_ip mac netdev-socket-option script
start_guest() {
	local r=$1 R=${1^^} env=$sync/env-$1 v
	{
		for v in $(compgen -e RKDAPL_); do printf 'RKDAPL_%s=%q\n' "${v#RKDAPL_}" "${!v}"; done
		printf 'RKDAPL_%s=%q\n' ROLE "$r" IP "$2" PEER_IP "$3" MAC "$4" SYNC "$sync" \
			TOP "$top" MODROOT "$modroot" BUILD "$build" KUNIT_GLOB "$kunit_glob"
	} > "$env"
	log "guest $R: $2 $4, script $6, log $out/guest-$r.log"
	# The guest writes its output to sync/out-<role>.log (virtme's virtio-serial
	# script I/O is not reliable when udev is slow); the serial console, with
	# the kernel log, goes to console-<role>.log.
	: > "$sync/out-$r.log"
	timeout -k 10 "$tmo" $hide_udev "$VNG" -r "$kernel" "${accel[@]}" "${vng_mods[@]}" --force-9p \
		--verbose --name "rkdapl-$r" --memory "${RKDAPL_MEM:-1G}" --cpus "${RKDAPL_CPUS:-2}" \
		--rwdir="$sync" --append "$kargs" \
		--qemu-opts="-netdev socket,id=r0,$5 -device virtio-net-pci,netdev=r0,mac=$4 -pidfile $sync/qemu-$r.pid ${RKDAPL_QEMU_OPTS:-}" \
		-- "bash $(printf %q "$top/qemu/guest-run.sh") $(printf %q "$env") $(printf %q "$6")" \
		</dev/null >"$out/console-$r.log" 2>&1 &
	pid[$r]=$!
	tail -n +1 -F --pid="${pid[$r]}" "$sync/out-$r.log" 2>/dev/null | sed -u "s/^/[$R] /" &
}

trap 'log "interrupted, stopping guests"; kill "${pid[@]}" ${killer:-} 2>/dev/null; wait; exit 130' INT TERM
t0=$(date +%s)
roles=a
start_guest a 10.77.0.1 10.77.0.2 52:54:00:77:00:01 "listen=127.0.0.1:$port" "$(realpath "$1")"
if [ $one = 0 ]; then
	roles="a b"
	for ((i = 0; i < 300; i++)); do
		[ -n "$(ss -Htln "sport = :$port")" ] && break
		kill -0 "${pid[a]}" 2>/dev/null || break
		sleep 0.2
	done
	start_guest b 10.77.0.2 10.77.0.1 52:54:00:77:00:02 "connect=127.0.0.1:$port" "$(realpath "$2")"
fi

# A guest's script may ask for its guest to be killed (selftests/peerkill.sh: the peer dies
# mid-transfer) by creating sync/kill-<role>, once it has reported its results: its QEMU is
# then killed with SIGKILL, as abruptly as a host can lose a machine.
# Boot watchdog: now and then a TCG guest stops early in boot (seen: spinning after
# "vgaarb: loaded", both vCPUs busy, for as long as it was left). A guest whose console has
# not shown the harness-start line (written by guest-run.sh) after RKDAPL_BOOT_TIMEOUT s is
# marked sync/noboot-<role> and every guest of the run is killed; the whole run is then
# started once more (below). So is a guest whose kernel panicked before that line: nothing
# of rkdapl is loaded then (seen once: Debian's stock kernel, 2 s into boot, "Oops: int3" in
# sched_clock_cpu() while another vCPU patched a static key: TCG's cross-modifying code).

# boot_panic R: true if guest R's kernel panicked before the harness started.
boot_panic() {
	! grep -qa 'rkdapl: harness start' "$out/console-$1.log" &&
		grep -qa 'Kernel panic - not syncing' "$out/console-$1.log"
}
stop_boot_panic() {
	local q
	touch "$sync/noboot-$1"
	log "guest ${1^^}: kernel panic during boot, before the harness started (see console-$1.log); stopping the guests"
	for q in "$sync"/qemu-*.pid; do kill -KILL "$(< "$q")" 2>/dev/null; done
}
watchdog() {
	local r q t0 boot=${RKDAPL_BOOT_TIMEOUT:-300}
	t0=$(date +%s)
	while :; do
		for r in $roles; do
			[ -s "$sync/qemu-$r.pid" ] || continue
			if [ -e "$sync/kill-$r" ] && [ ! -e "$sync/killed-$r" ]; then
				kill -KILL "$(< "$sync/qemu-$r.pid")" && touch "$sync/killed-$r" &&
					log "guest ${r^^}: killed (SIGKILL to its QEMU), as its script asked"
			fi
			[ ! -e "$sync/noboot-$r" ] || continue
			grep -qa 'rkdapl: harness start' "$out/console-$r.log" && continue
			if [ $(( $(date +%s) - t0 )) -gt "$boot" ]; then
				touch "$sync/noboot-$r"
				log "guest ${r^^}: not booted after $boot s (console: $(tail -n 1 "$out/console-$r.log" | cut -c1-80)); stopping the guests"
				for q in "$sync"/qemu-*.pid; do kill -KILL "$(< "$q")" 2>/dev/null; done
			elif boot_panic "$r"; then
				stop_boot_panic "$r"
			fi
		done
		sleep 0.5
	done
}
watchdog &
killer=$!

fail=0 dmesgs=()
for r in $roles; do
	R=${r^^}
	wait "${pid[$r]}"
	st=$?
	rc=$(cat "$sync/rc-$r" 2>/dev/null)
	# The guest's QEMU may exit before the watchdog's next look.
	[ -z "$rc" ] && [ ! -e "$sync/noboot-$r" ] && boot_panic "$r" && stop_boot_panic "$r"
	if [ -e "$sync/noboot-$r" ]; then
		log "guest $R: did not boot (see console-$r.log)"
		fail=1
	elif [ -e "$sync/killed-$r" ] && [ -n "$rc" ]; then
		log "guest $R: killed as asked, after reporting its results"
		[ "$rc" = 0 ] || { log "guest $R: script FAILED, exit $rc"; fail=1; }
	elif [ "$st" = 124 ] || [ "$st" = 137 ]; then
		log "guest $R: HUNG, killed after ${tmo} s (script exit: ${rc:-none})"
		fail=1
	elif [ -z "$rc" ]; then
		log "guest $R: no script exit status (vng exit $st; crash? see console-$r.log)"
		fail=1
	elif [ "$rc" != 0 ]; then
		log "guest $R: script FAILED, exit $rc"
		fail=1
	else
		log "guest $R: script passed"
	fi
	# The guest's own dmesg dump; failing that, the kernel console.
	if [ -s "$sync/dmesg-$r.txt" ]; then
		cp "$sync/dmesg-$r.txt" "$out/"
		dmesgs+=("$out/dmesg-$r.txt")
	else
		dmesgs+=("$out/console-$r.log")
	fi
	[ -n "$rc" ] && cp "$sync/rc-$r" "$out/"
	cp "$sync/out-$r.log" "$out/guest-$r.log"
done
kill "$killer" 2>/dev/null
wait
log "guests done in $(( $(date +%s) - t0 )) s"
# A boot hang is the emulator's, not the code's: once per run, the attempt's files go to
# boot-hang/ and everything starts again (the lock is taken anew by the new process).
if compgen -G "$sync/noboot-*" > /dev/null && [ -z "${RKDAPL_BOOT_RETRY:-}" ]; then
	log "a guest did not boot: starting the run once more (first attempt kept in $out/boot-hang)"
	pkill -KILL -f "qemu-system-x86_64 -name rkdapl-" 2>/dev/null
	mkdir -p "$out/boot-hang"
	find "$out" -mindepth 1 -maxdepth 1 ! -name boot-hang -exec mv -t "$out/boot-hang" {} +
	RKDAPL_BOOT_RETRY=1 RKDAPL_OUT=$out exec "$0" "${args[@]}"
fi
"$top/qemu/splat-scan.sh" "${dmesgs[@]}" > "$out/splats.tap" || fail=1
cat "$out/splats.tap"
log "$( [ $fail = 0 ] && echo PASS || echo FAIL ): logs in $out"
exit $fail
