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
