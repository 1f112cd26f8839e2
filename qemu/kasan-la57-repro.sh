#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Reproduces, on demand, the boot-time KASAN false positive of debug kernels under 5-level
# paging (docs/testing.md, "Boot-time KASAN false positive"): an interrupt that lands while
# the boot CPU's identify_cpu() has cleared boot_cpu_data's feature bits (X86_FEATURE_LA57
# among them) and not yet read them back from CPUID.
#
#   RKDAPL_BUILD=<debug build dir> qemu/kasan-la57-repro.sh [kernel args...]
#
# Boots the kernel on vng's machine (q35, -cpu max, 2 vCPUs, 1G, TCG) under gdb, stops the boot
# CPU on identify_cpu()'s call to get_cpu_cap() (inside the window) and has it execute
# "int $0x30", the vector of IRQ0 (HPET/PIT on IO-APIC pin 2, an edge interrupt:
# handle_edge_irq), as an IRQ0 arriving there does; then restores the code and lets the boot go
# on past identify_boot_cpu(). Prints the KASAN report if there is one. Exit 0 if the kernel
# reported nothing, 1 if it did. Pass "no5lvl" to check the workaround run-guests.sh uses.
# Holds $RKDAPL_CACHE/guests.lock (one guest run at a time on the host) for ~15-60 s.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"
build=${RKDAPL_BUILD:?RKDAPL_BUILD must name the debug kernel build dir}
vmlinux=$build/vmlinux
grep -qx 'CONFIG_KASAN=y' "$build/.config" || die "$build is not a KASAN kernel"
command -v gdb > /dev/null || die "needs gdb"
grep -qx 'CONFIG_RANDOMIZE_BASE=y' "$build/.config" && set -- nokaslr "$@"
# The call to get_cpu_cap() in identify_cpu() (the feature words are zero until it returns).
addr=$(llvm-objdump-19 -d --no-show-raw-insn --disassemble-symbols=identify_cpu "$vmlinux" |
	awk '/call.*<get_cpu_cap>/ { sub(":", "", $1); print "0x" $1; exit }')
[ -n "$addr" ] || die "no call to get_cpu_cap in identify_cpu of $vmlinux"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
con=$tmp/console
port=$((20000 + RANDOM % 40000))
exec 9>"$RKDAPL_CACHE/guests.lock"
flock -n 9 || { log "another guest run holds $RKDAPL_CACHE/guests.lock, waiting"; flock 9; }
qemu-system-x86_64 -name rkdapl-la57-repro -machine q35 -cpu max -smp 2 -m 1G \
	-display none -vga none -parallel none -net none -no-reboot -S -gdb "tcp:127.0.0.1:$port" \
	-serial "file:$con" -kernel "$build/arch/x86/boot/bzImage" \
	-append "console=ttyS0 panic=-1 loglevel=7 kunit.enable=0 $*" &
q=$!
sleep 1
cat > "$tmp/gdb" <<EOF
set pagination off
set confirm off
target remote 127.0.0.1:$port
hbreak *$addr
continue
delete
set \$at = \$pc
set \$orig = *(unsigned short *)\$at
set {unsigned short}\$at = 0x30cd
hbreak *(\$at + 2)
continue
delete
printf "rkdapl: int \$0x30 injected at %p (identify_cpu, call get_cpu_cap), handler returned\n", \$at
set {unsigned short}\$at = \$orig
set \$pc = \$at
detach
EOF
timeout 300 gdb -q -batch -x "$tmp/gdb" "$vmlinux" 2>&1 | grep '^rkdapl:' ||
	{ kill $q; die "gdb did not reach $addr"; }
for ((t = 0; t < 1200; t++)); do
	grep -qa 'pid_max:' "$con" && break
	sleep 0.1
done
sleep 0.5
kill $q 2>/dev/null
wait $q 2>/dev/null
echo "kernel args: $*"
if grep -qa 'BUG: KASAN' "$con"; then
	sed -n '/BUG: KASAN/,/Disabling lock debugging/p' "$con"
	exit 1
fi
echo "no KASAN report"
