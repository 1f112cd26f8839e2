#!/bin/bash
# Build rkdapl's documentation under out/docs/ (`make docs`):
#
#   out/docs/index.html       links to everything below
#   out/docs/api.html         C API reference: the kernel's scripts/kernel-doc on include/rkdapl.h
#   out/docs/man/man9/*.9     the same as man pages (man -l out/docs/man/man9/rkdapl_ep_connect.9)
#   out/docs/guide.html       docs/guide.md rendered (the .md is copied next to it)
#   out/docs/rust/            the kernel's `make rustdoc` on the patched tree: the kernel crate
#                             with kernel::rdma (rust/kernel/rdma/index.html), core, macros, ...
#   out/docs/rkdapl/          rustdoc of the provider crate rust/rkdapl (private items), made
#                             from its rustc command line when `make modules` has run here
#   out/docs/rustdoc.log      make rustdoc's output; rustdoc-private.log: the kernel crate again
#                             with private items (a link check, output discarded). Warnings
#                             located in kernel::rdma are printed at the end.
#
#   scripts/docs.sh [debug|release]
#
# kernel-doc runs with -Wall and any warning fails the build, as does any docutils warning
# while rendering. rustdoc warnings in kernel::rdma are listed but do not fail the build unless
# RKDAPL_DOCS_STRICT=1.
set -euo pipefail
. "$(dirname "$0")/common.sh"
top=$(cd "$(dirname "$0")/.." && pwd)
docs=$top/out/docs
py=/usr/bin/python3   # Debian's, which has python3-docutils and python3-markdown

# The build lock (as scripts/modules.sh): kernel.sh may copy this tree's Rust layer into the
# shared kernel tree, and make rustdoc writes into it.
exec 9>"$RKDAPL_CACHE/modules.lock"
flock 9
kdir=$("$top/scripts/kernel.sh" "${1:-debug}")
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
[ -f "$docs.new/rust/kernel/rdma/index.html" ] || die "rustdoc has no kernel::rdma (is the patched tree in use?)"
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

# kernel::rdma with its private items too (make rustdoc documents the public API only):
# a check for broken links in internal docs; the output is thrown away, the warnings kept.
priv=$(mktemp -d)
(cd "$kdir" && rustdoc_from_cmd rust/.kernel.o.cmd kernel "$priv") \
	> "$docs.new/rustdoc-private.log" 2>&1 ||
	log "private-items rustdoc of the kernel crate failed, see out/docs/rustdoc-private.log"
rm -rf "$priv"

# The provider crate (rust/rkdapl, private items: everything in it is pub(crate)), if
# `make modules` has built it here.
if [ -f "$top/rust/rkdapl/.rkdapl.o.cmd" ]; then
	if rustdoc_from_cmd "$top/rust/rkdapl/.rkdapl.o.cmd" rkdapl "$docs.new/rkdapl" \
		--extern-html-root-url kernel=../../rust > "$docs.new/rustdoc-rkdapl.log" 2>&1; then
		log "provider crate: rkdapl/rkdapl/index.html"
	else
		log "rustdoc of the provider crate failed (see out/docs/rustdoc-rkdapl.log); skipped"
		rm -rf "$docs.new/rkdapl"
	fi
else
	log "provider crate docs skipped: run make modules first"
fi
flock -u 9

# rustdoc's warnings whose location is in the Rust RDMA layer.
rdma_warn=$(awk '/^warning: srctree\/ link to rust\/kernel\/rdma/ { if (!seen[$0]++) print; next }
	/^(warning|error)/ { msg = $0; next }
	msg != "" && /-->/ { if ($0 ~ /rust\/kernel\/rdma(\.rs|\/)/) { sub(/^ *--> */, ""); w = msg " at " $0
		if (!seen[w]++) print w }; msg = "" }' \
	"$docs.new/rustdoc.log" "$docs.new/rustdoc-private.log")

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
<li><a href="rkdapl/rkdapl/index.html">rkdapl</a>, the provider crate, private items included
    (when <code>make modules</code> had been run)</li>
<li><a href="rust/kernel/rdma/index.html">kernel::rdma</a>, the Rust RDMA layer, and the rest of the
    <a href="rust/kernel/index.html">kernel crate</a> (rustdoc)</li>
</ul>
<p>Built by <code>make docs</code> from $(git -C "$top" describe --always --dirty 2>/dev/null || echo "a work tree").</p>
</body></html>
EOF

rm -rf "$docs"
mv "$docs.new" "$docs"
if [ -n "$rdma_warn" ]; then
	log "rustdoc warnings in kernel::rdma:"
	printf '%s\n' "$rdma_warn" >&2
	[ "${RKDAPL_DOCS_STRICT:-0}" = 0 ] || die "rustdoc warnings in kernel::rdma (RKDAPL_DOCS_STRICT=1)"
else
	log "no rustdoc warnings in kernel::rdma"
fi
log "docs ready: $docs/index.html"
