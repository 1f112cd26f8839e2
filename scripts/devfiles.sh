#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The files an out-of-tree consumer module of rkdapl builds against, for one kernel, in
# /usr/src/rkdapl/KERNELRELEASE/ (docs/install.md):
#
#   include/rkdapl.h   the C API
#   Module.symvers     rkdapl.ko's exports (KBUILD_EXTRA_SYMBOLS=...)
#   librkdapl.rmeta    the rkdapl crate's metadata, for Rust consumers (-L ... --extern rkdapl)
#
# The last two belong to one build of rkdapl.ko: they are rewritten by each install of it.
#
#   scripts/devfiles.sh save DIR                    (in a build tree) copy librkdapl.rmeta to DIR
#                                                   (dkms.conf's POST_BUILD: DKMS keeps the
#                                                   build's Module.symvers in DIR itself)
#   scripts/devfiles.sh install KERNELRELEASE DIR   (in a source tree) install include/rkdapl.h,
#                                                   and Module.symvers, librkdapl.rmeta from DIR
#   scripts/devfiles.sh remove KERNELRELEASE        remove /usr/src/rkdapl/KERNELRELEASE
#
# Env: DESTDIR, a root to install into instead of /.
set -eu
die() { echo "devfiles.sh: $*" >&2; exit 1; }
dest() { echo "${DESTDIR:-}/usr/src/rkdapl/$1"; }

case "${1:-}" in
save)
	[ $# = 2 ] || die "usage: $0 save DIR"
	[ -f rust/rkdapl/librkdapl.rmeta ] || die "no rust/rkdapl/librkdapl.rmeta in $PWD (not built?)"
	mkdir -p "$2"
	cp rust/rkdapl/librkdapl.rmeta "$2/"
	;;
install)
	[ $# = 3 ] || die "usage: $0 install KERNELRELEASE DIR"
	d=$(dest "$2")
	for f in include/rkdapl.h "$3/Module.symvers" "$3/librkdapl.rmeta"; do
		[ -f "$f" ] || die "no $f"
	done
	grep -q '	rkdapl_ia_close	' "$3/Module.symvers" || die "$3/Module.symvers is not rkdapl.ko's"
	rm -rf "$d"
	mkdir -p "$d/include"
	install -m 644 include/rkdapl.h "$d/include/"
	install -m 644 "$3/Module.symvers" "$3/librkdapl.rmeta" "$d/"
	echo "rkdapl: consumer files for $2 in $d"
	;;
remove)
	[ $# = 2 ] || die "usage: $0 remove KERNELRELEASE"
	d=$(dest "$2")
	rm -rf "$d"
	rmdir "${d%/*}" 2>/dev/null || true
	;;
*) die "usage: $0 save DIR | install KERNELRELEASE DIR | remove KERNELRELEASE" ;;
esac
