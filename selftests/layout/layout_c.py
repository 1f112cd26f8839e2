#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn libclang's layout of structs, as bindgen reports it, into C static assertions for the
kernel's C compiler (selftests/layout/Kbuild).

bindgen's layout tests give libclang's size and alignment of every struct it emits and the
offset of each named field:

    ["Size of X"][size_of::<X>() - N]        ["Alignment of X"][align_of::<X>() - N]
    ["Offset of field: X::f"][offset_of!(X, f) - N]

They give no offset for the anonymous structs and unions bindgen names `__bindgen_anon_N` (of
a type `X__bindgen_ty_N`), so the fields inside those (`wr_cqe` of `ib_send_wr`, `ib_recv_wr`,
`ib_wc`, ...) are placed by a second bindgen run, over enum constants whose values libclang
computes: `offsetof(struct ib_send_wr, wr_cqe)` (the probes). Fields of a named member of a
bindgen-invented type are checked through it (`offsetof(struct rdma_cm_event, param.conn)`),
with that member's size and alignment. What has no C spelling (bitfield storage units, the
size of an anonymous member) is not checked, but the fields after it are.

  layout_c.py probes -o OUT.h BINDINGS.rs TYPE...
      writes the probe header: an enum whose constants are the C offset expressions libclang
      has to evaluate, after #include "rdma_bindings.h"
  layout_c.py asserts -o OUT.h --cc TEXT --libclang TEXT BINDINGS.rs PROBES.rs TYPE...
      writes one _Static_assert per size, alignment and offset, for the kernel's C compiler,
      and RKDAPL_LAYOUT_SUMMARY, a line saying what was compared (the module's modinfo)

TYPE: the struct tags to check (`struct TYPE` or, for a union, `union TYPE`, in C).
"""
import argparse
import re
import sys

# bindgen appends `_` to C identifiers that are Rust keywords (`type` -> `type_`).
RUST_KEYWORDS = set("""as async await break const continue crate dyn else enum extern false fn
for if impl in let loop match mod move mut pub ref return self Self static struct super trait
true type unsafe use where while abstract become box do final macro override priv try typeof
unsized virtual yield union""".split())

NUM = r"\s*-\s*(\d+)usize\s*\]"
TYPE = r"\s*::\s*<\s*\w+\s*>\s*\(\s*\)"
SIZE_RE = re.compile(r'\["Size of (\w+)"\]\s*\[[^\]]*?size_of' + TYPE + NUM)
ALIGN_RE = re.compile(r'\["Alignment of (\w+)"\]\s*\[[^\]]*?align_of' + TYPE + NUM)
OFFSET_RE = re.compile(r'\["Offset of field: (\w+)::(\w+)"\]\s*\[[^\]]*?offset_of\s*!\s*\([^)]*\)'
                       + NUM)
PROBE_RE = re.compile(r"\b\w*rkdapl_layout_p(\d+)\s*:\s*\w+\s*=\s*(\d+)\s*;")


def c_name(field):
    """The C name of a field as bindgen spells it in Rust."""
    if field.endswith("_") and field[:-1] in RUST_KEYWORDS:
        return field[:-1]
    return field


def version(text):
    """The version number in a compiler's version text: `19.1.7` of `Debian clang version
    19.1.7 (3+b1)`, `14.2.0` of `x86_64-linux-gnu-gcc-14 (Debian 14.2.0-19) 14.2.0`."""
    v = re.findall(r"\b\d+\.\d+\.\d+\b", text.split("version")[-1])
    return v[-1] if v else "(version unknown)"


class Bindings:
    """libclang's layout as one bindgen output file reports it."""

    def __init__(self, path):
        self.text = open(path).read()
        self.size = {t: int(n) for t, n in SIZE_RE.findall(self.text)}
        self.align = {t: int(n) for t, n in ALIGN_RE.findall(self.text)}
        self.offset = {(t, f): int(n) for t, f, n in OFFSET_RE.findall(self.text)}

    def body(self, t):
        m = re.search(r"\bpub\s+(struct|union)\s+" + t + r"\s*\{([^}]*)\}", self.text)
        return (m.group(1), m.group(2)) if m else (None, "")

    def fields(self, t):
        """The fields of `t` in order: name, bindgen-invented type (`t__bindgen_ty_N`) or None,
        whether the field is an array of it, libclang's offset (None when not reported)."""
        for f, ty in re.findall(r"\bpub\s+(\w+)\s*:\s*([^,]*)", self.body(t)[1]):
            n = re.search(r"\b(" + t + r"__bindgen_ty_\d+)\b", ty)
            yield f, n and n.group(1), ty.lstrip().startswith("["), self.offset.get((t, f))

    def is_union(self, t):
        kind, body = self.body(t)
        return kind == "union" or "bindgen_union_field" in body


def checks(b, types, errors):
    """The checks, in a fixed order: (kind, C expression, libclang's value or None when a
    probe has to give it, description); the number of anonymous members and of bitfield
    storage units (no C spelling: the fields after them are checked)."""
    out, anon, bitfields = [], [0], [0]

    def walk(root, tag, t, prefix, base):
        # The fields of bindgen type `t`, at offset `base` of `root` (None inside an anonymous
        # member: bindgen does not say where that is), reached through C designator `prefix`.
        for f, sub, array, off in b.fields(t):
            if f.startswith("__bindgen_anon_"):
                if sub is None:
                    errors.append("%s::%s: its type is not in bindgen's output" % (t, f))
                    continue
                anon[0] += 1
                walk(root, tag, sub, prefix, None)
                continue
            if off is None:
                # Not a C field: bindgen's union storage, padding, bitfield alignment, or a
                # bitfield storage unit `_bitfield_N` (C bitfields have no offsetof).
                if re.match(r"_bitfield_\d+$", f):
                    bitfields[0] += 1
                elif not f.startswith(("bindgen_", "__bindgen_", "_bitfield_align_")):
                    errors.append("%s::%s: bindgen gives no offset for it" % (t, f))
                continue
            d = prefix + c_name(f)
            where = None if base is None else base + off
            out.append(("offset", "offsetof(%s %s, %s)" % (tag, root, d), where,
                        "offset of %s.%s" % (root, d)))
            if sub is not None and (sub not in b.size or sub not in b.align):
                errors.append("%s: no size or alignment in bindgen's output" % sub)
            elif sub is not None:
                m = "((%s %s *)0)->%s%s" % (tag, root, d, "[0]" if array else "")
                out.append(("size", "sizeof(%s)" % m, b.size[sub], "size of %s.%s" % (root, d)))
                out.append(("align", "_Alignof(typeof(%s))" % m, b.align[sub],
                            "alignment of %s.%s" % (root, d)))
                walk(root, tag, sub, d + ("[0]." if array else "."), where)

    for t in types:
        if t not in b.size or t not in b.align:
            errors.append("%s: not in bindgen's output (not in the headers? misspelt?)" % t)
            continue
        tag = "union" if b.is_union(t) else "struct"
        out.append(("type", tag + " " + t, None, None))
        out.append(("size", "sizeof(%s %s)" % (tag, t), b.size[t], "size of %s %s" % (tag, t)))
        out.append(("align", "_Alignof(%s %s)" % (tag, t), b.align[t],
                    "alignment of %s %s" % (tag, t)))
        walk(t, tag, t, "", 0)
    return out, anon[0], bitfields[0]


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["probes", "asserts"])
    ap.add_argument("--cc")
    ap.add_argument("--libclang")
    ap.add_argument("-o", dest="output", required=True, help="the file to write")
    ap.add_argument("bindings")
    ap.add_argument("rest", nargs="+", metavar="[PROBES.rs] TYPE")
    a = ap.parse_args()
    errors = []
    b = Bindings(a.bindings)
    if a.mode == "probes":
        out, _, _ = checks(b, a.rest, errors)
        probes = [e for k, e, v, _ in out if k != "type" and v is None]
        if errors:
            for e in errors:
                print("layout_c.py: %s" % e, file=sys.stderr)
            return 1
        text = ["/* Generated by selftests/layout/layout_c.py: libclang evaluates these",
                " * offsets, of fields inside anonymous members, in a second bindgen run. */",
                "#include <linux/stddef.h>", '#include "rdma_bindings.h"', "",
                "enum rkdapl_layout_probe {"]
        text += ["\trkdapl_layout_p%d = %s," % (i, e) for i, e in enumerate(probes)]
        write(a.output, text + ["};"])
        return 0

    if a.cc is None or a.libclang is None or len(a.rest) < 2:
        ap.error("asserts needs --cc, --libclang, PROBES.rs and the types")
    probe_text = open(a.rest[0]).read()
    probed = {int(i): int(v) for i, v in PROBE_RE.findall(probe_text)}
    out, anon, bitfields = checks(b, a.rest[1:], errors)
    n_probes = sum(1 for k, _, v, _ in out if k != "type" and v is None)
    if sorted(probed) != list(range(n_probes)):
        errors.append("%s has %d probe values, %d expected" % (a.rest[0], len(probed), n_probes))
    if errors:
        for e in errors:
            print("layout_c.py: %s" % e, file=sys.stderr)
        return 1

    cc = a.cc.replace('"', "'")
    count = {"size": 0, "align": 0, "offset": 0}
    lines, p = [], 0
    for kind, expr, value, what in out:
        if kind == "type":
            lines.append("\n/* %s */" % expr)
            continue
        if value is None:
            value, p = probed[p], p + 1
        count[kind] += 1
        lines.append('_Static_assert(%s == %d,\n\t"%s is %d for libclang (bindgen), not for %s");'
                     % (expr, value, what, value, cc))
    total = sum(count.values())
    summary = ("libclang %s == %s %s for %d structs, %d sizes/alignments/offsets (%d sizes, "
               "%d alignments, %d offsets, %d of them in %d anonymous members, probed; %d bitfield "
               "units unchecked)"
               % (version(a.libclang), "clang" if "clang" in a.cc else "gcc", version(a.cc),
                  len(a.rest) - 1, total, count["size"], count["align"], count["offset"],
                  n_probes, anon, bitfields))
    write(a.output, ["/* Generated by selftests/layout/layout_c.py from bindgen's layout tests and"
                     " probes:\n * do not edit. */"] + lines +
          ['\n#define RKDAPL_LAYOUT_SUMMARY "%s"' % summary])
    return 0


if __name__ == "__main__":
    sys.exit(main())
