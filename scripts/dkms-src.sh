#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The source tree of rkdapl's shipped modules, as DKMS builds it (`make dkms-src`):
#
#   scripts/dkms-src.sh ROOT     writes ROOT/usr/src/rkdapl-<version>/ and prints its path
#   scripts/dkms-src.sh version  prints the version, RKDAPL_VERSION of include/rkdapl.h
#
# The tree holds what `make -C $KDIR M=$PWD` reads (Kbuild, include/, rust/, samples/), the
# licence, dkms.conf with PACKAGE_VERSION filled in, and the scripts dkms.conf runs. The same
# tree is what `make install KERNEL=debian` builds from (scripts/debian.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "dkms-src.sh: $*" >&2; exit 1; }
ver=$(sed -n 's/^#define RKDAPL_VERSION "\([^"]*\)"$/\1/p' "$top/include/rkdapl.h")
[ -n "$ver" ] || die "no RKDAPL_VERSION in $top/include/rkdapl.h"
[ "${1:-}" = version ] && { echo "$ver"; exit 0; }
[ $# = 1 ] || die "usage: $0 ROOT | version"
paths=(Kbuild COPYING dkms.conf include rust samples scripts/dkms-check.sh scripts/devfiles.sh)
d=$1/usr/src/rkdapl-$ver
rm -rf "$d"
mkdir -p "$d"
# A checkout's own files (a build's objects stay behind); a release tarball's as they are.
if git -C "$top" rev-parse --git-dir > /dev/null 2>&1; then
	(cd "$top" && git ls-files -co --exclude-standard -- "${paths[@]}") | (cd "$top" && tar -cf - -T -)
else
	(cd "$top" && find "${paths[@]}" -type f ! -name '*.o' ! -name '*.ko' ! -name '.*.cmd' | tar -cf - -T -)
fi | tar -xf - -C "$d"
sed -i "s/#MODULE_VERSION#/$ver/" "$d/dkms.conf"
grep -q "^PACKAGE_VERSION=\"$ver\"$" "$d/dkms.conf" || die "could not set PACKAGE_VERSION in $d/dkms.conf"
echo "$d"
