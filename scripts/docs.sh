#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build rkdapl's documentation under out/docs/ (`make docs`):
#
#   out/docs/index.html       links to everything below
#   out/docs/api.html         C API reference: the kernel's scripts/kernel-doc on include/rkdapl.h
#   out/docs/man/man9/*.9     the same as man pages (man -l out/docs/man/man9/rkdapl_ep_connect.9)
#   out/docs/guide.html       docs/guide.md rendered (the .md is copied next to it)
#   out/docs/rust/            the kernel's `make rustdoc`: the kernel crate, core, macros, ...
#   out/docs/rkdapl/          rustdoc of the provider crate rust/rkdapl (private items), made
#                             from its rustc command line, with the Rust RDMA layer it carries
#                             (rkdapl/rkdapl/rdma/index.html, kernel::rdma upstream)
#   out/docs/rustdoc.log      make rustdoc's output; rustdoc-rkdapl.log the provider crate's.
#                             Warnings located in the RDMA layer are printed at the end.
#
#   scripts/docs.sh [debug|release]
#
# kernel-doc runs with -Wall and any warning fails the build, as does any docutils warning
# while rendering. rustdoc warnings in the RDMA layer are listed but do not fail the build unless
# RKDAPL_DOCS_STRICT=1.
set -euo pipefail
. "$(dirname "$0")/common.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
docs=$top/out/docs
py=/usr/bin/python3   # Debian's, which has python3-docutils and python3-markdown

# The kernel and this tree's modules (the provider crate's rustc command line is the one its
# rustdoc uses), then the build lock (as scripts/modules.sh): make rustdoc writes into the
# kernel's build directory.
kdir=$("$top/scripts/modules.sh" "${1:-debug}" | tail -n 1)
exec 9>"$RKDAPL_CACHE/modules.lock"
flock -n 9 || { log "another run holds $RKDAPL_CACHE/modules.lock (a module build), waiting"; flock 9; }
cd "$top"   # kernel-doc names the file as given: include/rkdapl.h
ksrc=$kdir
[ -e "$kdir/source/scripts/kernel-doc" ] && ksrc=$(readlink -f "$kdir/source")
kerneldoc=$ksrc/scripts/kernel-doc
[ -e "$kerneldoc" ] || die "no scripts/kernel-doc in $ksrc"

rm -rf "$docs.new"
mkdir -p "$docs.new/man/man9"

# --- C API: kernel-doc --------------------------------------------------------------------
start=$(date +%s)
log "kernel-doc -Wall on include/rkdapl.h"
warn=$($py "$kerneldoc" -Wall -none include/rkdapl.h 2>&1) || die "kernel-doc failed: $warn"
[ -z "$warn" ] || { printf '%s\n' "$warn" >&2; die "kernel-doc warnings in include/rkdapl.h"; }
$py "$kerneldoc" -rst include/rkdapl.h > "$docs.new/rkdapl-api.rst"
$py "$top/scripts/kdoc2html.py" "$top/include/rkdapl.h" "$docs.new/rkdapl-api.rst" \
	"$docs.new/api.html" >&2
rm -f "$docs.new/api.html.rst"
# One man page per symbol, named after it (struct/enum keyword dropped): rkdapl_event.9, ...
$py "$kerneldoc" -man include/rkdapl.h |
	awk -v dir="$docs.new/man/man9" '
		/^\.TH "/ { split($0, q, "\""); n = split(q[2], w, " "); f = dir "/" w[n] ".9"
			    if (f in seen) { print "duplicate man page " f > "/dev/stderr"; exit 1 }
			    seen[f] = 1 }
		f { print > f }'
nman=$(ls "$docs.new/man/man9" | wc -l)
[ "$nman" -gt 0 ] || die "kernel-doc -man produced no pages"
log "C API: api.html and $nman man pages in $(( $(date +%s) - start )) s"

# --- guide -------------------------------------------------------------------------------
cp "$top/docs/guide.md" "$docs.new/guide.md"
$py - "$top/docs/guide.md" "$docs.new/guide.html" <<'EOF'
import sys, markdown
body = markdown.markdown(open(sys.argv[1], encoding="utf-8").read(),
                         extensions=["tables", "fenced_code", "toc"])
# Links into the repository: the header is api.html here, the rest is two levels up.
body = body.replace('href="../include/rkdapl.h"', 'href="api.html"')
body = body.replace('href="../', 'href="../../')
open(sys.argv[2], "w", encoding="utf-8").write(
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>rkdapl guide</title>\n"
    "<style>body{max-width:60em;margin:auto;font-family:sans-serif;line-height:1.4}"
    "pre{background:#f4f4f4;padding:.5em;overflow:auto}"
    "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.2em .5em}</style>"
    "</head><body>\n" + body + "\n</body></html>\n")
EOF

# --- Rust: the kernel's make rustdoc -----------------------------------------------------------
# Kbuild writes into the kernel tree (include/generated, ...): never alongside a module build.
log "make rustdoc in $kdir"
start=$(date +%s)
export LIBCLANG_PATH=/usr/lib/llvm-19/lib
KFLAGS=(LLVM=-19 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc BINDGEN="$BINDGEN" ARCH=x86_64)
if ! make -C "$kdir" "${KFLAGS[@]}" -j"$(( $(nproc) + 1 ))" rustdoc > "$docs.new/rustdoc.log" 2>&1; then
	tail -30 "$docs.new/rustdoc.log" >&2
	die "make rustdoc failed, see $docs.new/rustdoc.log"
fi
rustdoc_s=$(( $(date +%s) - start ))
# Hard links when possible (480 MB, mostly core): make rustdoc deletes and rewrites its output
# rather than editing files in place, so the next run never changes this copy.
cp -al "$kdir/Documentation/output/rust/rustdoc" "$docs.new/rust" 2>/dev/null ||
	{ rm -rf "$docs.new/rust"; cp -a "$kdir/Documentation/output/rust/rustdoc" "$docs.new/rust"; }
log "rustdoc in $rustdoc_s s ($(du -sh "$docs.new/rust" | cut -f1))"

# rustdoc with the flags of a crate's saved rustc command line (Kbuild's .cmd file).
# make rustdoc adds the same ABI-mismatch workaround for rustc >= 1.88.
rustcver=$(sed -n 's/^CONFIG_RUSTC_VERSION=//p' "$kdir/.config")
abi_fix=
[ "${rustcver:-0}" -ge 108800 ] && abi_fix=-Cunsafe-allow-abi-mismatch=fixed-x18
rustdoc_from_cmd() { # cmdfile crate outdir extra-args...
	local cmdfile=$1 crate=$2 outdir=$3 cmd
	shift 3
	cmd=$(sed -n 's/^savedcmd_[^ ]* := *//p' "$cmdfile" | sed 's/ ; .*//' | sed -E \
		's#/usr/bin/rustc #/usr/bin/rustdoc #; s# --emit=[^ ]+##g; s# --crate-type rlib##;
		 s# --out-dir [^ ]+##; s# --crate-name [^ ]+##; s# --remap-path-(prefix|scope)=[^ ]+##g; s# -Zbinary_dep_depinfo=y##')
	[ -n "$cmd" ] || return 1
	RUSTC_BOOTSTRAP=1 eval "$cmd --crate-name $crate --document-private-items \
		-Arustdoc::private_intra_doc_links $abi_fix -Zunstable-options -o '$outdir' $*"
}

# The provider crate (rust/rkdapl) with the RDMA layer it carries, private items included
# (everything in the provider is pub(crate)).
(cd "$top" && rustdoc_from_cmd "$top/rust/rkdapl/.rkdapl.o.cmd" rkdapl "$docs.new/rkdapl" \
	--extern-html-root-url kernel=../../rust) > "$docs.new/rustdoc-rkdapl.log" 2>&1 ||
	{ tail -30 "$docs.new/rustdoc-rkdapl.log" >&2; die "rustdoc of the provider crate failed, see $docs.new/rustdoc-rkdapl.log"; }
[ -f "$docs.new/rkdapl/rkdapl/rdma/index.html" ] || die "the provider crate's rustdoc has no rdma layer"
log "provider crate and RDMA layer: rkdapl/rkdapl/index.html, rkdapl/rkdapl/rdma/index.html"
flock -u 9

# rustdoc's warnings whose location is in the Rust RDMA layer.
rdma_warn=$(awk '/^(warning|error)/ { msg = $0; next }
	msg != "" && /-->/ { if ($0 ~ /kernel\/rdma(\.rs|\/)/) { sub(/^ *--> */, ""); w = msg " at " $0
		if (!seen[w]++) print w }; msg = "" }' "$docs.new/rustdoc-rkdapl.log")

# --- index -------------------------------------------------------------------------------
cat > "$docs.new/index.html" <<EOF
<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>rkdapl documentation</title></head>
<body style="max-width:50em;margin:auto;font-family:sans-serif">
<h1>rkdapl documentation</h1>
<ul>
<li><a href="guide.html">Guide</a>: writing a consumer, lifetimes and contexts, error handling
    (<a href="guide.md">markdown</a>)</li>
<li><a href="api.html">C API reference</a> (include/rkdapl.h, kernel-doc); man pages in
    <code>man/man9/</code></li>
<li><a href="rkdapl/rkdapl/rdma/index.html">the Rust RDMA layer</a> (<code>kernel::rdma</code>
    upstream, <code>rkdapl::rdma</code> as rkdapl.ko carries it) and
    <a href="rkdapl/rkdapl/index.html">rkdapl</a>, the provider crate, private items included</li>
<li>the <a href="rust/kernel/index.html">kernel crate</a> (rustdoc)</li>
</ul>
<p>Built by <code>make docs</code> from $(git -C "$top" describe --always --dirty 2>/dev/null || echo "a work tree").</p>
</body></html>
EOF

rm -rf "$docs"
mv "$docs.new" "$docs"
if [ -n "$rdma_warn" ]; then
	log "rustdoc warnings in the RDMA layer:"
	printf '%s\n' "$rdma_warn" >&2
	[ "${RKDAPL_DOCS_STRICT:-0}" = 0 ] || die "rustdoc warnings in the RDMA layer (RKDAPL_DOCS_STRICT=1)"
else
	log "no rustdoc warnings in the RDMA layer"
fi
log "docs ready: $docs/index.html"
