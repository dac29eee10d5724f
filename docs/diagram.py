#!/usr/bin/env python3
"""Draw docs/architecture.svg, the picture of dfccl's layers in docs/architecture.md.

    python3 docs/diagram.py            # writes architecture.svg next to this script
    python3 docs/diagram.py -o FILE    # writes FILE instead

Standard library only.  To change the picture, edit the tables below (BOXES, ARROWS,
LAYERS); the drawing code after them should not need to change.  The script refuses to
write a picture in which a box's text would overflow the box, an arrow would point
upward (calls go from an upper layer to a lower one, or sideways), or an arrow's label
would sit on a box; the message names the box or arrow to fix.
"""

import argparse
import os
import sys
from xml.sax.saxutils import escape

# ---------------------------------------------------------------------------------------
# The tables.  Coordinates are pixels, origin at the top left; y grows downward.
# ---------------------------------------------------------------------------------------

WIDTH, HEIGHT = 1000, 740
TITLE = "dfccl: layers"
LEGEND = ("arrows: calls and submissions; "
          "every collective runs as a preemptible task inside a daemon")

# layer -> (fill, stroke, dashed border?)
LAYERS = {
    "user":      ("#e3f2fd", "#1e88e5", False),
    "component": ("#ede7f6", "#5e35b1", False),
    "api":       ("#e8f5e9", "#43a047", False),
    "engine":    ("#fff8e1", "#f9a825", False),
    "daemon":    ("#fbe9e7", "#e64a19", False),
    "transport": ("#eceff1", "#546e7a", False),
    "tport":     ("#ffffff", "#546e7a", False),   # a transport inside the group
    "tools":     ("#fafafa", "#757575", True),
}

# kind "box": title (bold) and lines, centred in the box.
# kind "group": a container drawn behind the boxes inside it; its title and lines are
#   written along its bottom edge, so that arrows can enter its boxes from above.
# (id, kind, layer, x, y, w, h, title, [lines])
BOXES = [
    ("mpi_app", "box", "user", 40, 72, 540, 64,
     "MPI application",
     ["MPI_Allreduce etc. on CUDA or host buffers", "e.g. mpi4py, OSU benchmarks"]),
    ("c_app", "box", "user", 620, 72, 340, 64,
     "C application",
     ["calls the dfccl.h API directly"]),

    ("ompi", "box", "component", 40, 172, 540, 64,
     "Open MPI coll component \u2013 ompi_coll_dfccl/",
     ["mca_coll_dfccl.so: module, request, staging, argument checks"]),
    ("tools", "box", "tools", 690, 172, 270, 64,
     "Tools",
     ["tools/: dfccl-info, dfccl-trace", "bench/: dfccl-bench"]),

    ("api", "box", "api", 40, 272, 920, 58,
     "Public API \u2013 include/dfccl.h, dfccl_mpi.h",
     ["communicators, collectives, requests, dfcclConfig_t"]),

    ("engine", "box", "engine", 40, 366, 920, 96,
     "Engine \u2013 engine/ (written once for both daemons)",
     ["api*.c: calls, checks, requests \u00b7 memkind.c: the memory kind picks a daemon \u00b7 "
      "comm.c: communicators",
      "eng_ring.h: submission ring \u00b7 "
      "eng_sched.h: scheduler (slots, budgets, preemption)",
      "algo_*.h: ring, LL, one-shot, direct, chain, pairwise, scan \u00b7 "
      "settings.c, config.c: DFCCL_* / dfcclConfig_t"]),

    ("cpu", "box", "daemon", 40, 506, 430, 64,
     "CPU daemon \u2013 cpu/cpu_daemon.c",
     ["worker threads: cpu_intake.c, cpu_sched.c, cpu_diag.c", "primitives: prims_cpu.h"]),
    ("gpu", "box", "daemon", 530, 506, 430, 64,
     "GPU daemon \u2013 cuda/gpu_daemon.cu",
     ["persistent kernel, one block per channel", "primitives: cuda_prims.cuh"]),

    ("transport", "group", "transport", 40, 604, 920, 122,
     "engine/transport.h",
     ["one interface: reaches, connect, close, describe; one locality decision (locality.c)"]),
    ("shm", "box", "tport", 50, 614, 260, 68,
     "shm \u2013 engine/shm.c",
     ["same host, CPU daemon"]),
    ("ucx", "box", "tport", 330, 614, 340, 68,
     "UCX \u2013 ucx_transport/",
     ["other hosts, proxy threads;", "GPU daemon host-staged (cuda/gpu_net.cu)"]),
    ("ipc", "box", "tport", 690, 614, 260, 68,
     "CUDA IPC \u2013 cuda/gpu_ipc.cu",
     ["same host, GPU daemon"]),
]

# (from, to, label, options).  Options (all optional):
#   x      the x of a vertical arrow (default: middle of the boxes' common x range)
#   at     where along the arrow its label sits, 0..1 (default 0.5)
#   side   "right" or "left" of the arrow for the label (default "right")
#   style  "solid" or "dotted" (default "solid")
ARROWS = [
    ("mpi_app", "ompi", "MPI_* collectives", {}),
    ("ompi", "api", "dfccl* calls", {}),
    ("c_app", "api", "dfccl* calls", {"x": 650, "at": 0.82}),
    ("tools", "api", "", {"style": "dotted"}),
    ("api", "engine", "", {"x": 500}),
    ("engine", "cpu", "submission ring (host buffers)", {}),
    ("engine", "gpu", "submission ring (device buffers)", {"side": "left"}),
    ("cpu", "shm", "", {}),
    ("cpu", "ucx", "", {}),
    ("gpu", "ucx", "", {}),
    ("gpu", "ipc", "", {}),
]

# ---------------------------------------------------------------------------------------
# Drawing.  Nothing below should need editing to change the picture's content.
# ---------------------------------------------------------------------------------------

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
TITLE_SIZE, LINE_SIZE, LABEL_SIZE, HEAD_SIZE, LEGEND_SIZE = 14, 13, 12, 20, 13
LINE_GAP = 5          # between lines of text
PAD_X, PAD_Y = 8, 4   # the least room between text and a box's edge
RADIUS = 8


class DiagramError(Exception):
    pass


def text_width(text, size):
    """Estimated width of text in pixels: 0.6 * font size per character."""
    return 0.6 * size * len(text)


def text_block(box):
    """[(text, size, bold)] for a box's title and lines."""
    _id, _kind, _layer, _x, _y, _w, _h, title, lines = box
    return [(title, TITLE_SIZE, True)] + [(ln, LINE_SIZE, False) for ln in lines]


def block_height(block):
    return sum(size for _t, size, _b in block) + LINE_GAP * (len(block) - 1)


def check_box(box):
    bid, kind, layer, x, y, w, h, _title, _lines = box
    if layer not in LAYERS:
        raise DiagramError("box %r: unknown layer %r" % (bid, layer))
    if kind not in ("box", "group"):
        raise DiagramError("box %r: unknown kind %r" % (bid, kind))
    if x < 0 or y < 0 or x + w > WIDTH or y + h > HEIGHT:
        raise DiagramError("box %r lies outside the %dx%d canvas" % (bid, WIDTH, HEIGHT))
    block = text_block(box)
    for text, size, _bold in block:
        need = text_width(text, size) + 2 * PAD_X
        if need > w:
            raise DiagramError("text overflows box %r: %r needs about %d px, the box is %d px wide"
                               % (bid, text, need, w))
    need_h = block_height(block) + 2 * PAD_Y
    if kind == "box" and need_h > h:
        raise DiagramError("text overflows box %r: %d lines need about %d px, the box is %d px high"
                           % (bid, len(block), need_h, h))


def inside(inner, outer):
    return (inner[3] >= outer[3] and inner[4] >= outer[4] and
            inner[3] + inner[5] <= outer[3] + outer[5] and
            inner[4] + inner[6] <= outer[4] + outer[6])


def check_groups(boxes):
    """A group's text along its bottom edge must stay clear of the boxes inside it."""
    for g in boxes:
        if g[1] != "group":
            continue
        gid, _k, _l, gx, gy, gw, gh = g[:7]
        text_top = gy + gh - PAD_Y - 2 - block_height(text_block(g))
        for b in boxes:
            if b is g or b[1] == "group" or not inside(b, g):
                continue
            if b[4] + b[6] + 4 > text_top:
                raise DiagramError("text overflows group %r: box %r covers its caption"
                                   % (gid, b[0]))


def rects_overlap(a, b):
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah


def arrow_geometry(arrow, byid):
    """(x1, y1, x2, y2) of an arrow; refuses one that would point upward."""
    src, dst, _label, opts = arrow
    for end in (src, dst):
        if end not in byid:
            raise DiagramError("arrow %s -> %s: no box %r" % (src, dst, end))
    _, _, _, sx, sy, sw, sh = byid[src][:7]
    _, _, _, dx, dy, dw, dh = byid[dst][:7]
    if dy >= sy + sh:                                   # downward
        lo, hi = max(sx, dx), min(sx + sw, dx + dw)
        if "x" in opts:
            x = opts["x"]
            if not (lo <= x <= hi):
                raise DiagramError("arrow %s -> %s: x=%d is not above both boxes (%d..%d)"
                                   % (src, dst, x, lo, hi))
            return x, sy + sh, x, dy
        if lo < hi:
            x = (lo + hi) / 2.0
            return x, sy + sh, x, dy
        return sx + sw / 2.0, sy + sh, dx + dw / 2.0, dy  # slanted, still downward
    if sy < dy + dh and dy < sy + sh:                   # side by side
        y = (max(sy, dy) + min(sy + sh, dy + dh)) / 2.0
        if dx >= sx + sw:
            return sx + sw, y, dx, y
        if dx + dw <= sx:
            return sx, y, dx + dw, y
        raise DiagramError("arrow %s -> %s: the boxes overlap" % (src, dst))
    raise DiagramError("arrow %s -> %s points upward: %r must lie below or beside %r"
                       % (src, dst, dst, src))


def label_rect(arrow, geom):
    _src, _dst, label, opts = arrow
    x1, y1, x2, y2 = geom
    t = opts.get("at", 0.5)
    mx, my = x1 + (x2 - x1) * t, y1 + (y2 - y1) * t
    w = text_width(label, LABEL_SIZE)
    if y1 == y2:                                        # sideways: label above the line
        return mx - w / 2.0, my - 4 - LABEL_SIZE, w, LABEL_SIZE, "middle", mx, my - 6
    if opts.get("side", "right") == "left":
        return mx - 6 - w, my - LABEL_SIZE / 2.0, w, LABEL_SIZE, "end", mx - 6, my + LABEL_SIZE * 0.35
    return mx + 6, my - LABEL_SIZE / 2.0, w, LABEL_SIZE, "start", mx + 6, my + LABEL_SIZE * 0.35


def check(boxes, arrows):
    ids = [b[0] for b in boxes]
    dup = set(i for i in ids if ids.count(i) > 1)
    if dup:
        raise DiagramError("box ids used twice: %s" % ", ".join(sorted(dup)))
    for b in boxes:
        check_box(b)
    check_groups(boxes)
    byid = dict((b[0], b) for b in boxes)
    for a in arrows:
        geom = arrow_geometry(a, byid)
        if a[3].get("style", "solid") not in ("solid", "dotted"):
            raise DiagramError("arrow %s -> %s: unknown style" % (a[0], a[1]))
        if not a[2]:
            continue
        lx, ly, lw, lh = label_rect(a, geom)[:4]
        if lx < 0 or lx + lw > WIDTH:
            raise DiagramError("label of arrow %s -> %s runs off the canvas" % (a[0], a[1]))
        for b in boxes:
            if b[1] == "group":
                continue
            if rects_overlap((lx, ly, lw, lh), (b[3], b[4], b[5], b[6])):
                raise DiagramError("label %r of arrow %s -> %s lies on box %r"
                                   % (a[2], a[0], a[1], b[0]))
    for text, size in ((TITLE, HEAD_SIZE), (LEGEND, LEGEND_SIZE)):
        if 40 + text_width(text, size) > WIDTH - 40:
            raise DiagramError("heading %r is wider than the canvas" % text)


def svg_text(x, y, text, size, bold=False, anchor="middle", fill="#212121"):
    weight = ' font-weight="bold"' if bold else ""
    return ('<text x="%g" y="%g" font-size="%d"%s text-anchor="%s" fill="%s">%s</text>'
            % (x, y, size, weight, anchor, fill, escape(text)))


def draw_box(box, out):
    bid, kind, layer, x, y, w, h, _title, _lines = box
    fill, stroke, dashed = LAYERS[layer]
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    out.append('<g id="%s">' % escape(bid))
    out.append('<rect x="%g" y="%g" width="%g" height="%g" rx="%d" ry="%d" '
               'fill="%s" stroke="%s" stroke-width="1.5"%s/>'
               % (x, y, w, h, RADIUS, RADIUS, fill, stroke, dash))
    block = text_block(box)
    if kind == "group":
        top = y + h - PAD_Y - 2 - block_height(block)  # as check_groups() assumes
    else:
        top = y + (h - block_height(block)) / 2.0
    for text, size, bold in block:
        baseline = top + size * 0.8
        out.append(svg_text(x + w / 2.0, round(baseline, 1), text, size, bold))
        top += size + LINE_GAP
    out.append("</g>")


def draw_arrow(arrow, geom, out):
    src, dst, label, opts = arrow
    x1, y1, x2, y2 = geom
    dotted = opts.get("style", "solid") == "dotted"
    dash = ' stroke-dasharray="2 4"' if dotted else ""
    out.append('<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#424242" stroke-width="1.6"%s '
               'marker-end="url(#head)"><title>%s</title></line>'
               % (x1, y1, x2, y2, dash, escape("%s -> %s" % (src, dst))))
    if label:
        _lx, _ly, _lw, _lh, anchor, tx, ty = label_rect(arrow, geom)
        out.append(svg_text(round(tx, 1), round(ty, 1), label, LABEL_SIZE,
                            anchor=anchor, fill="#424242"))


def render(boxes=BOXES, arrows=ARROWS):
    check(boxes, arrows)
    byid = dict((b[0], b) for b in boxes)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
        'font-family="%s">' % (WIDTH, HEIGHT, WIDTH, HEIGHT, FONT),
        "<title>%s</title>" % escape(TITLE),
        "<!-- drawn by docs/diagram.py; edit its tables, not this file -->",
        "<defs>",
        '<marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto">',
        '<path d="M0,0 L10,5 L0,10 z" fill="#424242"/>',
        "</marker>",
        "</defs>",
        '<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>' % (WIDTH, HEIGHT),
        svg_text(40, 32, TITLE, HEAD_SIZE, bold=True, anchor="start"),
        svg_text(40, 54, LEGEND, LEGEND_SIZE, anchor="start", fill="#616161"),
    ]
    for b in boxes:                       # groups first, so their boxes lie on top
        if b[1] == "group":
            draw_box(b, out)
    for b in boxes:
        if b[1] != "group":
            draw_box(b, out)
    for a in arrows:
        draw_arrow(a, arrow_geometry(a, byid), out)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description="Write dfccl's architecture picture as SVG.")
    p.add_argument("-o", "--output", default=os.path.join(here, "architecture.svg"),
                   help="where to write the SVG (default: architecture.svg beside this script)")
    args = p.parse_args(argv)
    try:
        svg = render()
    except DiagramError as e:
        sys.exit("diagram.py: %s" % e)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(svg)
    print("wrote %s" % args.output)


if __name__ == "__main__":
    main()
