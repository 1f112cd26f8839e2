#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Fetch Debian's linux-source-$KVER (trixie-backports) with a private apt
# state directory (the system's apt sources stay untouched) and unpack it
# once into $RKDAPL_CACHE/src/linux-source-$KVER. Prints the tree's path.
set -euo pipefail
. "$(dirname "$0")/common.sh"

SRC=$RKDAPL_CACHE/src
tree=$SRC/linux-source-$KVER
if [ -f "$tree/.rkdapl-unpacked" ]; then echo "$tree"; exit 0; fi

# One unpacking at a time (make patches and a guest run may both find the tree missing); the
# one that waited finds it unpacked.
mkdir -p "$SRC"
exec 8> "$SRC/.unpack.lock"
flock 8
if [ -f "$tree/.rkdapl-unpacked" ]; then echo "$tree"; exit 0; fi

apt=$RKDAPL_CACHE/apt
apt_private "$apt"
opts=("${APT_OPTS[@]}")
echo "deb $(debian_mirror) trixie-backports main" > "$apt/sources.list"
deb=$(ls "$apt"/linux-source-"$KVER"_*.deb 2>/dev/null | head -n1 || true)
if [ -z "$deb" ]; then
	log "downloading linux-source-$KVER from trixie-backports (private apt state in $apt)"
	apt-get -q "${opts[@]}" update >&2
	(cd "$apt" && apt-get -q "${opts[@]}" download "linux-source-$KVER" >&2)
	deb=$(ls "$apt"/linux-source-"$KVER"_*.deb | head -n1)
fi
log "unpacking $deb"
tmp=$(mktemp -d "$SRC/.unpack.XXXX")
dpkg-deb -x "$deb" "$tmp"
tar -C "$tmp" -xf "$tmp/usr/src/linux-source-$KVER.tar.xz"
rm -rf "$tree"
mv "$tmp/linux-source-$KVER" "$tree"
rm -rf "$tmp"
basename "$deb" > "$tree/.rkdapl-unpacked"
echo "$tree"
