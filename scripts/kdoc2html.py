#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Render kernel-doc's reStructuredText output as one HTML page with plain docutils.

    kdoc2html.py HEADER KERNEL_DOC.rst OUT.html

kernel-doc -rst writes Sphinx C-domain markup (``.. c:function::``, ``:c:type:``), which
plain docutils does not know. This registers small stand-ins for those directives and roles
(a signature line with an anchor, the body indented under it, cross-references as links),
links every ``name()`` that names a documented function, and puts the header's overview
comment and an index on top. Any docutils warning fails the run (exit status 1), so the
page never silently loses text.
"""

import re
import sys

from docutils import nodes
from docutils.core import publish_file
from docutils.parsers.rst import Directive, directives, roles
from docutils.transforms import Transform

SYMBOLS = []  # (kind, name, id) in document order


def anchor(name):
    return nodes.make_id("sym-" + name)


class CDirective(Directive):
    """``.. c:function:: SIGNATURE`` and friends: an anchored signature, then the body."""

    has_content = True
    required_arguments = 1
    final_argument_whitespace = True
    kind = "function"

    def run(self):
        sig = " ".join(self.arguments[0].split())
        if self.kind == "function":
            m = re.search(r"(\w+)\s*\(", sig)
            name = m.group(1) if m else sig
            shown = re.sub(r"\s+\(", "(", sig)
        else:
            name = sig.split()[-1]
            shown = "%s %s" % (self.kind, name)
        ident = anchor(name)
        SYMBOLS.append((self.kind, name, ident))
        box = nodes.container(ids=[ident], classes=["csym", "c-" + self.kind])
        box += nodes.paragraph("", "", nodes.literal(shown, shown), classes=["sig"])
        self.state.nested_parse(self.content, self.content_offset, box)
        return [box]


def directive(kind):
    return type("C_" + kind, (CDirective,), {"kind": kind})


def xref_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``:c:type:`shown <target>``` or ``:c:func:`target``` as a link to the anchor."""
    m = re.match(r"^(.*?)\s*<([^<>]+)>$", text, re.S)
    shown, target = (m.group(1), m.group(2)) if m else (text, text)
    target = target.split(".")[0].split()[-1].rstrip("()")
    ref = nodes.reference(rawtext, "", nodes.literal(shown, shown), refid=anchor(target))
    return [ref], []


class LinkCalls(Transform):
    """Link ``rkdapl_foo()`` in running text to foo's entry, and check every link."""

    default_priority = 900

    def apply(self):
        known = {ident for _, _, ident in SYMBOLS}
        pat = re.compile(r"\b(rkdapl_\w+)\(\)")
        for text in list(self.document.findall(nodes.Text)):
            parent = text.parent
            if isinstance(parent, (nodes.literal, nodes.literal_block, nodes.title,
                                   nodes.reference)):
                continue
            s = str(text)
            if not pat.search(s) or not any(anchor(n) in known for n in pat.findall(s)):
                continue
            out, pos = [], 0
            for m in pat.finditer(s):
                if anchor(m.group(1)) not in known:
                    continue
                out.append(nodes.Text(s[pos:m.start()]))
                out.append(nodes.reference("", "", nodes.literal(m.group(0), m.group(0)),
                                           refid=anchor(m.group(1))))
                pos = m.end()
            out.append(nodes.Text(s[pos:]))
            parent.replace(text, out)
        for ref in self.document.findall(nodes.reference):
            rid = ref.get("refid")
            if not rid or rid in known:
                continue
            if rid.startswith(anchor("rkdapl")):
                self.document.reporter.warning("link to undocumented symbol %s" % rid,
                                               base_node=ref)
            # A kernel type documented elsewhere (struct sockaddr_in): keep the text.
            ref.replace_self(ref.children)


def overview(header):
    """The header's leading /* ... */ comment, without the SPDX line."""
    src = open(header, encoding="utf-8").read()
    comments = re.findall(r"/\*(.*?)\*/", src, re.S)
    text = next((c for c in comments if "SPDX" not in c), "")
    lines = [re.sub(r"^\s*\* ?", "", l) for l in text.splitlines()]
    return "\n".join(lines).strip("\n")


def main():
    header, rst_in, html_out = sys.argv[1:4]
    for kind in ("function", "struct", "union", "enum", "macro", "type"):
        directives.register_directive("c:" + kind, directive(kind))
    for r in ("type", "func", "macro", "member", "data", "enum", "enumerator", "expr"):
        roles.register_local_role("c:" + r, xref_role)
    kdoc = open(rst_in, encoding="utf-8").read()
    names = re.findall(r"^\.\. c:(\w+):: (.*)$", kdoc, re.M)
    toc = []
    for kind, sig in names:
        name = re.search(r"(\w+)\s*\(", sig).group(1) if kind == "function" else sig.split()[-1]
        label = name + "()" if kind == "function" else "%s %s" % (kind, name)
        toc.append("- :c:type:`%s <%s>`" % (label, name))
    ov = "\n".join("   " + l if l else "" for l in overview(header).splitlines())
    doc = """\
=========================
rkdapl C API reference
=========================

Generated by the kernel's ``scripts/kernel-doc`` from ``include/rkdapl.h``. See also the
`guide <guide.html>`_ and the `Rust layer's rustdoc <rust/kernel/rdma/index.html>`_.

Overview (from the header)
==========================

::

%s

Index
=====

%s

Reference
=========

.. raw:: html

   <style>
   div.csym { margin-top: 2.5em; border-top: 1px solid #bbb; padding-top: .5em; }
   div.csym p.sig { font-size: 1.1em; font-weight: bold; }
   div.csym > p:not(.sig) { font-style: italic; margin-left: 1.5em; }
   div.kernelindent { margin-left: 1.5em; }
   </style>

%s
""" % (ov, "\n".join(toc), kdoc)
    src = html_out + ".rst"
    with open(src, "w", encoding="utf-8") as f:
        f.write(doc)

    from docutils.readers.standalone import Reader

    class KdocReader(Reader):
        def get_transforms(self):
            return Reader.get_transforms(self) + [LinkCalls]

    from docutils.utils import SystemMessage

    try:
        publish_file(source_path=src, destination_path=html_out, reader=KdocReader(),
                     writer_name="html5",
                     settings_overrides={"halt_level": 2, "report_level": 2,
                                         "exit_status_level": 2, "embed_stylesheet": True,
                                         "toc_backlinks": "none", "section_self_link": True,
                                         "doctitle_xform": True})
    except SystemMessage as e:
        sys.exit("kdoc2html: %s" % e)
    print("%s: %d symbols" % (html_out, len(SYMBOLS)))


if __name__ == "__main__":
    main()
