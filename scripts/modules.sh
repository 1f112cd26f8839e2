#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build rkdapl.ko, the sample consumer and the selftest module against the prepared kernel.
#   scripts/modules.sh [debug|release|kcsan]   prints the kernel build directory on stdout
# The sample and selftest modules are built as separate external modules that only see
# include/rkdapl.h and rkdapl's Module.symvers (KBUILD_EXTRA_SYMBOLS), like any consumer.
set -euo pipefail
. "$(dirname "$0")/common.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
# One build at a time: kernel.sh may copy this tree's Rust layer into the shared kernel tree and
# rebuild it, and Kbuild regenerates files there (include/generated/compile.h).
exec 9>"$RKDAPL_CACHE/modules.lock"
flock -n 9 || { log "another run holds $RKDAPL_CACHE/modules.lock (a module build), waiting"; flock 9; }
kdir=$("$top/scripts/kernel.sh" "${1:-debug}")
# Modules of this worktree built against another kernel tree (the other flavour: make bench
# builds for release, make check for debug) are rebuilt from scratch.
old=$(cat "$top/out/kdir" 2>/dev/null || true)
if [ -n "$old" ] && [ "$old" != "$kdir" ]; then
	log "modules were built against $old; rebuilding them for $kdir"
	find "$top" -path "$top/out" -prune -o \( -name '*.o' -o -name '*.ko' -o -name '*.mod' \
		-o -name '*.mod.c' -o -name '.*.cmd' -o -name 'modules.order' \
		-o -name 'Module.symvers' -o -name '*.rmeta' \) -print | xargs rm -f
fi
KFLAGS=(LLVM=-19 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc BINDGEN="$BINDGEN" ARCH=x86_64)
log "building rkdapl.ko"
make -s -C "$kdir" M="$top" "${KFLAGS[@]}" modules >&2
for d in samples selftests/kmod selftests/layout; do
	[ -f "$top/$d/Kbuild" ] || continue
	log "building $d"
	make -s -C "$kdir" M="$top/$d" "${KFLAGS[@]}" KBUILD_EXTRA_SYMBOLS="$top/Module.symvers" modules >&2
done
mkdir -p "$top/out"
echo "$kdir" > "$top/out/kdir"
echo "$kdir"
