#!/bin/bash
# Prepare and build the guest kernel rkdapl runs on.
#
#   scripts/kernel.sh [debug|release|kcsan]     prints the build directory (O=) on stdout
#
# debug: tinyconfig + qemu/rkdapl.config (KASAN, lockdep, kmemleak, ...); release: + qemu/release.config
# (no debug checks, -O2); kcsan: + qemu/kcsan.config (the debug kernel with KCSAN instead of KASAN).
# Debian's source is unpacked once and built unchanged (O=): rkdapl.ko carries the Rust RDMA
# layer itself, as it must on a distribution kernel (scripts/debian.sh), and make patches
# writes the layer's upstream form. Build directories are keyed by kernel version + config
# fragments; Kbuild rebuilds only what changed inside one.
# KDIR=/path skips all of this and uses an already built tree.
set -euo pipefail
. "$(dirname "$0")/common.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
flavour=${1:-debug}

if [ -n "${KDIR:-}" ]; then echo "$KDIR"; exit 0; fi

pristine=$("$top/scripts/kernel-source.sh")
frags=("$top/qemu/rkdapl.config")
case $flavour in
debug) ;;
release | kcsan) frags+=("$top/qemu/$flavour.config") ;;
*) die "unknown kernel flavour '$flavour' (debug, release or kcsan)" ;;
esac

tree=$pristine

# --- configuration -------------------------------------------------------------
cfgsum=$(cat "${frags[@]}" | sha1sum | cut -c1-12)
out=$RKDAPL_CACHE/build/$KVER-$flavour-$cfgsum
mkdir -p "$out"
export LLVM=-19 LIBCLANG_PATH=/usr/lib/llvm-19/lib
MAKEARGS=(-C "$tree" O="$out" LLVM=-19 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
	BINDGEN="$BINDGEN" ARCH=x86_64)
if [ ! -f "$out/.config" ] || [ ! -f "$out/.rkdapl-config-ok" ]; then
	log "configuring $out (tinyconfig + ${frags[*]##*/})"
	make -s "${MAKEARGS[@]}" rustavailable >&2 || die "Rust toolchain not usable (run make deps)"
	make -s "${MAKEARGS[@]}" tinyconfig >&2
	KCONFIG_CONFIG="$out/.config" "$tree/scripts/kconfig/merge_config.sh" -m -O "$out" \
		"$out/.config" "${frags[@]}" >/dev/null
	make -s "${MAKEARGS[@]}" olddefconfig >&2
	# Every =y/=m line (and =<number>) of the fragments must have survived Kconfig's dependencies,
	# and every =n / "is not set" line must have ended up off. A symbol named by several fragments
	# is checked against the last one (release.config turns off what rkdapl.config turns on).
	bad=0
	declare -A want=()
	for f in "${frags[@]}"; do
		while IFS= read -r line; do
			if [[ $line =~ ^(CONFIG_[A-Z0-9_]+)=([ymn]|-?[0-9]+|0x[0-9a-fA-F]+)$ ]]; then
				want[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
			elif [[ $line =~ ^#\ (CONFIG_[A-Z0-9_]+)\ is\ not\ set$ ]]; then
				want[${BASH_REMATCH[1]}]=n
			fi
		done < "$f"
	done
	for sym in "${!want[@]}"; do
		if [ "${want[$sym]}" = n ]; then
			! grep -qE "^$sym=[ym]\$" "$out/.config" ||
				{ log "config: $sym is still on"; bad=1; }
		else
			grep -qx "$sym=${want[$sym]}" "$out/.config" ||
				{ log "config: $sym=${want[$sym]} did not stick"; bad=1; }
		fi
	done
	[ $bad = 0 ] || die "config fragment does not apply cleanly"
	touch "$out/.rkdapl-config-ok"
fi

# --- build ---------------------------------------------------------------------
jobs=$(( $(nproc) + 1 ))
log "building kernel in $out (make -j$jobs bzImage modules; the first build takes ~15-25 min)"
start=$(date +%s)
make "${MAKEARGS[@]}" -j"$jobs" bzImage modules 2>&1 |
	awk -v logf="$out/build.log" '{ print > logf; fflush(logf) }
		/^ *(CC|LD|AR|RUSTC|BINDGEN)/ { n++; if (n % 500 == 0) { printf "[rkdapl] ... %d objects built, at %s\n", n, $NF > "/dev/stderr" } }
		/error|Error/ { print > "/dev/stderr" }'
[ "${PIPESTATUS[0]}" = 0 ] || die "kernel build failed, see $out/build.log"
make -s "${MAKEARGS[@]}" INSTALL_MOD_PATH="$out/modroot" INSTALL_MOD_STRIP=1 modules_install >&2
log "kernel ready in $(( $(date +%s) - start )) s: $out"
echo "$out"
