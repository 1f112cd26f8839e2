# SPDX-License-Identifier: GPL-2.0
# Shared settings for rkdapl's host scripts (sourced, not run).
RKDAPL_CACHE=${RKDAPL_CACHE:-$HOME/.cache/rkdapl}
TOOLS=$RKDAPL_CACHE/tools
BINDGEN=${BINDGEN:-$TOOLS/bin/bindgen}
VNG=${VNG:-$TOOLS/venv/bin/vng}
KVER=${KVER:-7.3}
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export PATH=$TOOLS/bin:$TOOLS/venv/bin:$PATH
mkdir -p "$RKDAPL_CACHE" "$TOOLS"
log() { printf '[rkdapl %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# The Debian mirror this host's apt uses (no trailing slash), for the private apt states below.
debian_mirror() {
	local m
	m=$(grep -hoE 'https?://[^ ]*debian\.org/debian/?' /etc/apt/sources.list.d/*.sources \
		/etc/apt/sources.list 2>/dev/null | head -n1 || true)
	m=${m:-http://deb.debian.org/debian}
	echo "${m%/}"
}
# apt_private DIR: APT_OPTS, apt-get options for a private apt state in DIR (DIR/sources.list,
# lists, cache): packages are downloaded without touching the system's apt sources and state.
apt_private() {
	mkdir -p "$1/lists/partial" "$1/cache/archives/partial"
	APT_OPTS=(-o Dir::Etc::SourceList="$1/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$1/lists" -o Dir::Cache="$1/cache"
		-o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root)
}
