#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# dkms.conf's PRE_BUILD: can rkdapl be built for this kernel, with this machine's tools?
#
#   scripts/dkms-check.sh KERNELRELEASE KERNEL_TREE
#
# rkdapl.ko is Rust, and a Rust module links to the kernel crate by symbol names that embed a
# hash of the exact compiler build (most distribution kernels, Debian's among them, have no
# CONFIG_MODVERSIONS either): so it builds only against a kernel tree that has the kernel's Rust
# metadata, with the very rustc that kernel was built with. Each missing piece is named with
# what to do about it; all of them are listed, then the script fails. DKMS shows the list in its
# make.log (the path is in DKMS's error message). Also run by hand before `make -C $KDIR M=$PWD`.
#
# Env: RUSTC, BINDGEN, CROSS_COMPILE, LLVM as kbuild reads them.
set -u
krel=${1:?usage: $0 KERNELRELEASE KERNEL_TREE}
kdir=${2:?usage: $0 KERNELRELEASE KERNEL_TREE}
cfg=$kdir/.config
problems=()
problem() { problems+=("$*"); }
# conf NAME: the value of CONFIG_NAME in the kernel's .config (quotes removed), or nothing.
conf() { sed -n "s/^CONFIG_$1=\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$cfg" | head -n 1; }

echo "rkdapl: checking kernel $krel, tree $kdir"
if [ ! -f "$cfg" ]; then
	problem "no kernel tree for $krel at $kdir (no .config): install the kernel's headers, or
   give DKMS the prepared tree with --kernelsourcedir (Debian's stock kernel: docs/install.md)"
else
	# The kernel crate of 7.3: rkdapl's Rust code uses that release's kernel crate API.
	ver=$(sed -n 's/^VERSION = //p' "$kdir/Makefile" 2>/dev/null).$(sed -n 's/^PATCHLEVEL = //p' "$kdir/Makefile" 2>/dev/null)
	case $krel in
	7.3 | 7.3.* | 7.3-* | 7.3+*) ;;
	*) [ "$ver" = 7.3 ] ||
		problem "kernel $krel is not Linux 7.3: this rkdapl is written against 7.3's kernel crate,
   which changes between releases" ;;
	esac
	[ "$(conf RUST)" = y ] ||
		problem "CONFIG_RUST is not set in $cfg: this kernel was built without Rust support
   and cannot load Rust modules; boot a kernel built with CONFIG_RUST=y (Debian's own
   linux-image-amd64 7.3 has it)"
	case $(conf INFINIBAND) in
	y | m) ;;
	*) problem "CONFIG_INFINIBAND is not set in $cfg: the kernel has no RDMA core (ib_core,
   rdma_cm) for rkdapl to run on" ;;
	esac
	[ "$(conf INFINIBAND_ADDR_TRANS)" = y ] ||
		problem "CONFIG_INFINIBAND_ADDR_TRANS is not set in $cfg: rkdapl connects through rdma_cm"
	[ -f "$kdir/Module.symvers" ] ||
		problem "no $kdir/Module.symvers: the kernel's exports, which modpost checks against
   (Debian: /usr/src/linux-headers-$krel/Module.symvers; copy it into the tree)"

	# The kernel crate's metadata: `make modules_prepare` writes it; headers packages lack it.
	if [ "$(conf RUST)" = y ] &&
		{ [ ! -f "$kdir/rust/libkernel.rmeta" ] || [ ! -f "$kdir/rust/libmacros.so" ]; }; then
		problem "no Rust metadata in $kdir (rust/libkernel.rmeta, rust/libmacros.so): a Rust
   module compiles against the kernel crate's metadata, which distribution headers packages
   (Debian's linux-headers-*) do not ship. Prepare the kernel's source with its .config and
   the kernel's own rustc (make olddefconfig modules_prepare) and point DKMS at it with
   --kernelsourcedir; for Debian's stock 7.3.4+deb13-amd64, rkdapl's 'make KERNEL=debian'
   makes that tree (docs/stock-kernel.md)"
	fi

	# The exact compiler build: its version text is in the kernel's .config.
	want=$(conf RUSTC_VERSION_TEXT)
	rustc=${RUSTC:-rustc}
	if [ "$(conf RUST)" = y ] && [ -n "$want" ]; then
		if ! have=$("$rustc" --version 2>/dev/null); then
			problem "no Rust compiler ($rustc): install exactly '$want', the rustc this kernel was
   built with (Debian 13 trixie: apt install rustc rust-src)"
		elif [ "$have" != "$want" ]; then
			problem "the kernel was built with '$want', this machine's $rustc is '$have':
   Rust modules link to the kernel by symbol names that embed the compiler build, so only
   that exact rustc can build them (even another build of the same version cannot)"
		fi
		if [ -f "$kdir/rust/libkernel.rmeta" ] && ! grep -aqF "$want" "$kdir/rust/libkernel.rmeta"; then
			problem "$kdir/rust/libkernel.rmeta was not made by '$want': prepare the tree again
   (make modules_prepare) with that rustc"
		fi
		sysroot=$("$rustc" --print sysroot 2>/dev/null) &&
			[ ! -d "$sysroot/lib/rustlib/src/rust/library/core" ] &&
			problem "no Rust standard library source for $rustc in $sysroot/lib/rustlib/src:
   the kernel compiles its own core crate (Debian: apt install rust-src)"
	fi

	# bindgen, which rkdapl's build runs over the RDMA headers, with its libclang.
	bindgen=${BINDGEN:-bindgen}
	bwant=$(conf BINDGEN_VERSION_TEXT)
	if [ "$(conf RUST)" = y ]; then
		if ! bhave=$("$bindgen" --version 2>/dev/null); then
			problem "no bindgen ($bindgen): install ${bwant:-bindgen} (what this kernel was
   configured with) and its libclang (Debian 13 trixie: apt install bindgen libclang-19-dev)"
		elif [ -n "$bwant" ] && [ "$bhave" != "$bwant" ]; then
			problem "the kernel was configured with '$bwant', this machine's $bindgen is '$bhave'
   (Debian 13 trixie: apt install bindgen)"
		elif [ -f "$kdir/scripts/rust_is_available_bindgen_libclang.h" ] &&
			! "$bindgen" "$kdir/scripts/rust_is_available_bindgen_libclang.h" 2>&1 >/dev/null |
				grep -q 'clang version'; then
			problem "$bindgen finds no libclang (Debian: apt install libclang-19-dev)"
		fi
	fi

	# The C compiler: the kernel's, the same version (kbuild calls $(CROSS_COMPILE)gcc, or clang
	# with LLVM=, unless the tree's Makefile names another one, as Debian's headers do).
	cwant=$(conf CC_VERSION_TEXT)
	if [ "$(conf CC_IS_CLANG)" = y ]; then
		cc=clang
		[ -n "${LLVM:-}" ] && [ "${LLVM:-}" != 1 ] && cc=clang${LLVM#-}
		[[ ${LLVM:-} == */ ]] && cc=${LLVM}clang
		cver=$(conf CLANG_VERSION) vcmd="-dumpversion"
	else
		cc=${CROSS_COMPILE:-}gcc
		cver=$(conf GCC_VERSION) vcmd="-dumpfullversion"
	fi
	named=${cwant%% *}
	if [ -n "$cwant" ] && ! command -v "$named" >/dev/null && ! command -v "$cc" >/dev/null; then
		problem "no C compiler: the kernel was built by '$cwant'; install it (Debian's stock
   kernel: apt install gcc-14)"
	elif [ -n "$cver" ] && command -v "$cc" >/dev/null && ! command -v "$named" >/dev/null; then
		have=$("$cc" $vcmd 2>/dev/null)
		IFS=. read -r a b c <<< "$have"
		[ $((a * 10000 + b * 100 + ${c:-0})) = "$cver" ] ||
			problem "the kernel was built by '$cwant', $cc here is version $have: install that
   compiler (structure layouts and flags must match the kernel's)"
	elif [ -n "$cwant" ] && command -v "$named" >/dev/null; then
		have=$("$named" --version 2>/dev/null | head -n 1)
		[ "$have" = "$cwant" ] ||
			problem "the kernel was built by '$cwant', $named here is '$have': install that compiler"
	fi
fi

if [ ${#problems[@]} = 0 ]; then
	echo "rkdapl: kernel $krel can take rkdapl: Rust, RDMA core, the kernel crate's metadata, $(conf RUSTC_VERSION_TEXT)"
	exit 0
fi
{
	echo "rkdapl cannot be built for kernel $krel:"
	for p in "${problems[@]}"; do
		echo " - $p"
	done
	echo "(rkdapl's docs/install.md: which kernels work and why)"
} >&2
exit 1
