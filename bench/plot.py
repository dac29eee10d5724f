#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plot dfccl benchmark output: latency and bus bandwidth against message size.

    python3 bench/plot.py [-o DIR] [--png] [--np N] [--title TEXT] [--machine TEXT] FILE...

Inputs (the format is recognised line by line, so logs with mpirun's chatter mixed in
are fine, and one file may hold several runs):
  - dfccl-bench output: its default text table (nccl-tests' columns), -F csv (a header
    row, then one row a size) or -F json (one object a line). Series: out-of-place and
    in-place, labelled with what ran them: "dfccl" (the native API), "MPI through dfccl"
    (-A mpi with dfccl's Open MPI component taking the calls) or "plain MPI" (Open MPI's
    own components), as the output's engine field says. Text, json and the newer csv
    (its collective, ranks and engine columns) name the collective and the rank count;
    an older csv without them gives figures named after the file alone.
  - gpu_bench output (bench/gpu_bench.sh's log): blocks that start with a
    "# gpu_bench: COLL float32 ..., N ranks, ..., DFCCL_PREEMPT=P" line. Series: dfccl,
    and NCCL, staged MPI and MPI_* through dfccl where the block has those columns; the
    block's device-to-device copy rate is the ceiling of the traffic figure.
  Tables whose header is not one of these (gpu_bench's OSU-style table) are skipped
  with a warning; "# floor:" and other comment lines are ignored.

Outputs, in DIR (default: the current directory), SVG (PNG with --png), per collective:
  NAME-latency.svg   time per call against size
  NAME-busbw.svg     bus bandwidth (nccl-tests' busbw) against size
  NAME-traffic.svg   gpu_bench only: dfccl's device-memory traffic against the copy rate
NAME is the name of the input file the figure's runs come from, without its extension
("plot" where they come from several files), then the collective where the input names
it (and type and op where one collective comes with several). Axes
are log-log; one line per series, its colour the run's rank count (and file, with
several files), dashed where preemption was off.

Bandwidths are recomputed from size and time (the printed columns are rounded to
0.01 GB/s) where the collective and rank count are known, else taken as printed.
--np N keeps the runs of N ranks (csv runs, whose rank count is not recorded, are left
out). A malformed data row stops the script with the file and line; the exit status is
1 for bad input, 2 for bad options. Needs matplotlib (Debian: python3-matplotlib).
"""

import argparse
import io
import json
import math
import os
import re
import statistics
import sys
import textwrap

PROG = "plot.py"

# ---------------------------------------------------------------------------------------
# What the benchmarks print (bench/dfccl_bench_print.c: bench_print_header, bench_print_row;
# bench/gpu_bench.c: main)
# ---------------------------------------------------------------------------------------

# dfccl-bench: the text table's column header and the csv header
BENCH_TEXT_HEADER = ("size count type redop root time algbw busbw #wrong min p99 max "
                     "time algbw busbw #wrong").split()
BENCH_CSV_HEADER = ("size_bytes,count,type,redop,root,time_us,algbw_gbs,busbw_gbs,wrong,min_us,"
                    "p99_us,max_us,inplace_time_us,inplace_algbw_gbs,inplace_busbw_gbs,"
                    "inplace_wrong").split(",")
BENCH_CSV_MEM_API = ["memory", "api"]  # columns 17-18, where dfccl-bench has -B and -A
# columns 19-21 (newer dfccl-bench): what the run was, and what ran the calls (dfccl, or
# plain Open MPI under -A mpi)
BENCH_CSV_RUN = ["collective", "ranks", "engine"]
BENCH_ENGINE_RE = re.compile(r"engine (\S+)")
BENCH_RUN_RE = re.compile(r"dfccl-bench: dfccl \S+, (\d+) ranks, host (\S*)")
BENCH_COLL_RE = re.compile(r"collective (\S+), type (\S+), op (\S+), root")
BENCH_PREEMPT_RE = re.compile(r"env DFCCL_PREEMPT=(.*)")
BENCH_MEM_RE = re.compile(r"memory (\S+) \((.*)\), api (\S+)$")
BENCH_GPU_RE = re.compile(r"GPU \d+ of \d+: (.+)$")

# gpu_bench: a block's first line, its copy rate, the columns a table may have
GPU_BLOCK_RE = re.compile(r"gpu_bench: (\S+) (\S+)(?: (\S+))?, (\d+) ranks, (\d+) device\(s\) per node, "
                          r"(\d+) rank\(s\) per GPU, DFCCL_PREEMPT=([^,]*)")
GPU_COPY_RE = re.compile(r"device-to-device copy rate \(read\+write\): ([0-9.]+) GB/s")
GPU_COLUMNS = {"bytes", "dfccl_us", "busbw", "traffic", "%copy", "nccl_us", "nccl_bw", "nccl/df",
               "staged_us", "speedup", "mpi_us", "errors"}
MPI_NAMES = {"allreduce": "MPI_Allreduce", "reduce_scatter": "MPI_Reduce_scatter_block",
             "allgather": "MPI_Allgather", "bcast": "MPI_Bcast"}

# nccl-tests' bus bandwidth: busbw = size / time * factor(n ranks)
BUS_FACTOR = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "bcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}
BUS_FACTOR_TEXT = {"allreduce": "2(n−1)/n", "reduce_scatter": "(n−1)/n", "allgather": "(n−1)/n",
                   "alltoall": "(n−1)/n", "bcast": "1", "reduce": "1"}

# dfccl-bench prints nccl-tests' type names, gpu_bench float32: one name each
TYPE_NAMES = {"float": "float32", "double": "float64", "half": "float16"}

# how each series is drawn: marker, and the order in the legend
SERIES_STYLE = {"dfccl": "o", "out-of-place": "o", "in-place": "D", "NCCL": "^", "MPI": "x",
                "staged MPI": "s"}


class InputError(Exception):
    """A problem with the input or the options, reported without a traceback."""


def warn(msg):
    print(f"{PROG}: warning: {msg}", file=sys.stderr)


def bench_api_words(b):
    """What a dfccl-bench run timed, in words a legend can show: the native API, MPI
    through dfccl's component, or plain MPI (Open MPI's own components)."""
    if b.api == "dfccl" or (b.api is None and b.engine == "dfccl"):
        return "dfccl"
    if b.api == "mpi":
        return {"dfccl": "MPI through dfccl", "openmpi": "plain MPI"}.get(b.engine, "MPI")
    return b.api or ""


class Block:
    """One run of one benchmark: its settings and, per series, (bytes, time_us, busbw)."""

    def __init__(self, path, line, tool):
        self.path, self.line, self.tool = path, line, tool
        self.collective = self.dtype = self.op = None
        self.ranks = self.preempt = self.machine = self.copy_rate = None
        self.memory = self.api = None  # dfccl-bench -B (host, device) and -A (dfccl, mpi)
        self.engine = None  # dfccl-bench: dfccl or openmpi (plain Open MPI ran the MPI calls)
        self.series = {}   # name -> [(bytes, time_us, busbw GB/s or None)]
        self.traffic = []  # [(bytes, traffic GB/s)], gpu_bench's dfccl only
        self.json_key = None  # dfccl-bench json: (collective, type, redop, ranks, memory, api)

    def where(self):
        return f"{self.path}:{self.line}"

    def add(self, name, nbytes, time_us, busbw=None):
        self.series.setdefault(name, []).append((nbytes, time_us, busbw))

    def bus_factor(self):
        if self.collective in BUS_FACTOR and self.ranks:
            return BUS_FACTOR[self.collective](self.ranks)
        return None


# ---------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------

def number(tok, where, what, kind=float, suffix=""):
    """tok as a number (suffix, e.g. '%', stripped); an InputError naming where otherwise."""
    t = tok[:-len(suffix)] if suffix and tok.endswith(suffix) else tok
    try:
        v = kind(t)
    except ValueError:
        raise InputError(f"{where}: malformed row: {what} is {tok!r}, not a number") from None
    if kind is float and math.isnan(v):
        raise InputError(f"{where}: malformed row: {what} is {tok!r}")
    return v


def bench_row(block, fields, where, columns):
    """One dfccl-bench row (text or csv: the same 16 fields, in csv perhaps memory and api
    after them) into block; columns: the names of the fields."""
    if len(fields) != len(columns):
        raise InputError(f"{where}: malformed dfccl-bench row: {len(fields)} fields, expected "
                         f"{len(columns)} ({' '.join(columns)})")
    if len(fields) > len(BENCH_CSV_HEADER):
        block.memory, block.api = block.memory or fields[16], block.api or fields[17]
    if len(fields) > len(BENCH_CSV_HEADER) + len(BENCH_CSV_MEM_API):
        block.collective = block.collective or fields[18]
        block.ranks = block.ranks or number(fields[19], where, "ranks", int)
        block.engine = block.engine or fields[20]
    nbytes = number(fields[0], where, "size", int)
    block.dtype = block.dtype or TYPE_NAMES.get(fields[2], fields[2])
    block.op = block.op or (fields[3] if fields[3] != "none" else None)
    for name, (t, _algbw, bw, wrong) in (("out-of-place", fields[5:9]), ("in-place", fields[12:16])):
        if t in ("", "N/A"):  # not run (-I 0, alltoall)
            continue
        us = number(t, where, f"{name} time", float)
        busbw = number(bw, where, f"{name} busbw", float)
        if wrong not in ("", "N/A") and number(wrong, where, f"{name} #wrong", int):
            warn(f"{where}: {name} {nbytes} B: {wrong} wrong elements")
        block.add(name, nbytes, us, busbw)


def json_row(obj, where):
    """One dfccl-bench -F json line: (key of its run, size, {series: (time, busbw)})."""
    try:
        key = (obj["collective"], obj["type"], obj["redop"], int(obj["ranks"]), obj.get("memory"),
               obj.get("api"), obj.get("engine"))
        nbytes = int(obj["size_bytes"])
        out = {}
        for name, field in (("out-of-place", "out_of_place"), ("in-place", "in_place")):
            part = obj[field]
            if part is None:
                continue
            out[name] = (float(part["time_us"]), float(part["busbw_gbs"]))
            if part.get("wrong"):
                warn(f"{where}: {name} {nbytes} B: {part['wrong']} wrong elements")
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{where}: malformed dfccl-bench json row ({type(e).__name__}: {e})") from None
    return key, nbytes, out


def gpu_row(block, cols, toks, where):
    """One gpu_bench row, its columns named by the table's header cols."""
    if len(toks) != len(cols):
        raise InputError(f"{where}: malformed gpu_bench row: {len(toks)} fields, the header has "
                         f"{len(cols)} ({' '.join(cols)})")
    v = {}
    for c, t in zip(cols, toks):
        kind = int if c in ("bytes", "errors") else float
        v[c] = number(t, where, c, kind, {"%copy": "%", "speedup": "x"}.get(c, ""))
    nbytes = v["bytes"]
    names = (("dfccl_us", "dfccl", "busbw"), ("nccl_us", "NCCL", "nccl_bw"),
             ("staged_us", "staged MPI", None), ("mpi_us", "MPI", None))
    for col, name, bwcol in names:
        if col in v:
            block.add(name, nbytes, v[col], v[bwcol] if bwcol else None)
    if "traffic" in v:
        block.traffic.append((nbytes, v["traffic"]))
    if v.get("errors"):
        warn(f"{where}: {nbytes} B: {v['errors']} wrong elements")


def parse_file(path):
    """The blocks of one file. Raises InputError on a malformed row."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None
    blocks = []
    block = None
    table = None  # None, "skip", "text", or the column names (a tuple) of a csv or gpu_bench table

    def new_block(lineno, tool, like=None):
        nonlocal block
        block = Block(path, lineno, tool)
        if like is not None:  # a second table in one run: the same settings
            for a in ("collective", "dtype", "op", "ranks", "preempt", "machine", "copy_rate", "memory",
                      "api", "engine"):
                setattr(block, a, getattr(like, a))
        blocks.append(block)
        return block

    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        where = f"{path}:{lineno}"
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            toks = body.split()
            m = GPU_BLOCK_RE.match(body)
            if m:
                b = new_block(lineno, "gpu_bench")
                b.collective, dtype, b.op = m.group(1), m.group(2), m.group(3)
                b.dtype = TYPE_NAMES.get(dtype, dtype)
                b.ranks = int(m.group(4))
                ndev, per_gpu = int(m.group(5)), int(m.group(6))
                b.machine = f"{ndev} GPU{'s' if ndev > 1 else ''} per node"
                if per_gpu > 1:
                    b.machine += ", ranks sharing a GPU"
                b.preempt = m.group(7).split()[0] if m.group(7).strip() else None
                table = None
                continue
            if body.startswith("gpu_bench:"):
                raise InputError(f"{where}: gpu_bench block line not understood: {line}")
            m = BENCH_RUN_RE.match(body)
            if m:
                b = new_block(lineno, "dfccl-bench")
                b.ranks, b.machine = int(m.group(1)), f"host {m.group(2)}"
                table = None
                continue
            if block is not None and block.tool == "gpu_bench":
                m = GPU_COPY_RE.match(body)
                if m:
                    block.copy_rate = float(m.group(1))
                    continue
            if block is not None and block.tool == "dfccl-bench":
                m = BENCH_COLL_RE.match(body)
                if m:
                    block.collective = m.group(1)
                    block.dtype = TYPE_NAMES.get(m.group(2), m.group(2))
                    block.op = m.group(3) if block.collective in ("allreduce", "reduce_scatter",
                                                                  "reduce") else None
                    continue
                m = BENCH_MEM_RE.match(body)
                if m:
                    block.memory, block.api = m.group(1), m.group(3)
                    gpu = BENCH_GPU_RE.search(m.group(2))
                    if gpu:
                        block.machine += f", {gpu.group(1)}"
                    continue
                m = BENCH_ENGINE_RE.match(body)
                if m:
                    block.engine = m.group(1)
                    continue
                m = BENCH_PREEMPT_RE.match(body)
                if m:
                    v = m.group(1)
                    block.preempt = "1" if v.startswith("(unset") else v.strip()
                    continue
            if toks and toks[0] in ("bytes", "size"):  # a table's column header
                if toks == BENCH_TEXT_HEADER and block is not None and block.tool == "dfccl-bench":
                    table = "text"
                elif (block is not None and block.tool == "gpu_bench" and toks[:2] == ["bytes", "dfccl_us"]
                      and toks[-1] == "errors" and set(toks) <= GPU_COLUMNS
                      and len(set(toks)) == len(toks)):
                    table = tuple(toks)
                else:
                    warn(f"{where}: table header not recognised, its rows are skipped: {line}")
                    table = "skip"
                    continue
                if block.series:  # a second table in the same run
                    new_block(lineno, block.tool, like=block)
            continue  # any other comment
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError as e:
                raise InputError(f"{where}: malformed dfccl-bench json row: {e}") from None
            if not isinstance(obj, dict):
                raise InputError(f"{where}: malformed dfccl-bench json row: not an object")
            key, nbytes, parts = json_row(obj, where)
            last = max((p[0] for s in block.series.values() for p in s), default=-1) if block else -1
            if (block is None or block.tool != "dfccl-bench json" or block.json_key != key
                    or nbytes <= last):
                b = new_block(lineno, "dfccl-bench json")
                b.json_key = key
                b.collective, b.ranks, b.memory, b.api, b.engine = key[0], key[3], key[4], key[5], key[6]
                b.dtype = TYPE_NAMES.get(key[1], key[1])
                b.op = key[2] if key[2] != "none" else None
            for name, (us, busbw) in parts.items():
                block.add(name, nbytes, us, busbw)
            table = None
            continue
        if line.startswith("size_bytes,"):
            header = line.split(",")
            if header in (BENCH_CSV_HEADER, BENCH_CSV_HEADER + BENCH_CSV_MEM_API,
                          BENCH_CSV_HEADER + BENCH_CSV_MEM_API + BENCH_CSV_RUN):
                new_block(lineno, "dfccl-bench csv")
                table = tuple(header)
            else:
                warn(f"{where}: csv header not recognised, its rows are skipped: {line}")
                table = "skip"
            continue
        if not line[0].isdigit():
            continue  # not ours: mpirun's and Open MPI's messages, SKIP lines
        if table == "skip":
            continue
        if table is None:
            raise InputError(f"{where}: a data row outside any table this script knows: {line}")
        if table == "text":
            bench_row(block, line.split(), where, BENCH_TEXT_HEADER)
        elif block.tool == "dfccl-bench csv":
            bench_row(block, line.split(","), where, table)
        else:
            gpu_row(block, table, line.split(), where)

    kept = []
    for b in blocks:
        if b.series:
            kept.append(b)
        else:
            warn(f"{b.where()}: a {b.tool} run without data rows, skipped")
    return kept


# ---------------------------------------------------------------------------------------
# Plotting
# ---------------------------------------------------------------------------------------

def size_label(v, _pos=None):
    """8 -> '8 B', 1024 -> '1 KiB', 3 << 20 -> '3 MiB'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= scale:
            return f"{v / scale:g} {unit}"
    return f"{v:g} B"


def plain_number(v, _pos=None):
    return f"{v:g}"


def size_ticks(sizes):
    """Tick sizes: the sizes themselves where they are a few powers of two evenly spaced
    (gpu_bench's 8 B, 32 B, 128 B, ...), else powers of two on exponents that are multiples
    of 1, 2, 5 or 10, at most 14 (these include 1 KiB and 1 MiB)."""
    distinct = sorted(set(sizes))
    exps = [round(math.log2(s)) for s in distinct if (s & (s - 1)) == 0]
    evenly = len({b - a for a, b in zip(exps, exps[1:])}) == 1
    if len(exps) == len(distinct) and 1 < len(exps) <= 14 and evenly:
        return distinct
    e_lo, e_hi = math.floor(math.log2(distinct[0])), math.ceil(math.log2(distinct[-1]))
    for step in (1, 2, 5, 10, 20, 30):
        ticks = [2 ** e for e in range(e_lo, e_hi + 1) if e % step == 0]
        if len(ticks) <= 14:
            return ticks or [2 ** e_lo]
    return [2 ** e_lo, 2 ** e_hi]


def preempt_words(p):
    if p is None:
        return None
    return {"1": "preemption on", "0": "preemption off"}.get(p, f"DFCCL_PREEMPT={p}")


class Figures:
    """The figures of one collective: its blocks, and how each series is drawn."""

    def __init__(self, plt, ticker, blocks, several_files, args):
        self.plt, self.ticker, self.blocks, self.args = plt, ticker, blocks, args
        self.several_files = several_files
        b0 = blocks[0]
        self.collective = b0.collective
        # colour: the block's rank count (and file); a run repeated with the same
        # settings gets its own colour
        keys, self.colour_of, seen = [], {}, {}
        for b in blocks:
            base = self.colour_base(b)
            n = seen[(base, b.preempt)] = seen.get((base, b.preempt), 0) + 1
            key = base if n == 1 else f"{base}, run {n}"
            self.colour_of[id(b)] = key
            if key not in keys:
                keys.append(key)
        palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        self.colours = {k: palette[i % len(palette)] for i, k in enumerate(keys)}

    def colour_base(self, b):
        parts = []
        if self.several_files:
            parts.append(os.path.basename(b.path))
        parts.append(f"{b.ranks} ranks" if b.ranks else "ranks unknown")
        if b.api or b.memory:  # dfccl-bench -A and -B
            api = bench_api_words(b)
            parts.append(" on ".join(w for w in (api, f"{b.memory} buffers" if b.memory else "") if w))
        return ", ".join(parts)

    def series_label(self, b, name):
        if name == "MPI":
            name = f"{MPI_NAMES.get(b.collective, 'MPI')} through dfccl"
        words = [name, self.colour_of[id(b)]]
        if preempt_words(b.preempt):
            words.append(preempt_words(b.preempt))
        return ", ".join(words)

    def line_style(self, b):
        return {None: "-", "1": "-", "0": "--"}.get(b.preempt, ":")

    def title(self):
        if self.args.title:
            return self.args.title
        b0 = self.blocks[0]
        what = " ".join(w for w in (b0.collective, b0.dtype, b0.op) if w)
        if not b0.collective:
            what += " (dfccl-bench csv: collective and ranks not recorded)"
        ranks = sorted({b.ranks for b in self.blocks if b.ranks})
        parts = [what]
        if ranks:
            parts.append(" / ".join(map(str, ranks)) + (" rank" if ranks == [1] else " ranks"))
        machines = sorted({b.machine for b in self.blocks if b.machine})
        machine = self.args.machine or "; ".join(machines)
        if machine:
            parts.append(machine)
        return textwrap.fill(", ".join(parts), 110)

    def note(self, extra=""):
        files = list(dict.fromkeys(b.path for b in self.blocks))
        text = ("source: " if len(files) == 1 else "sources: ") + ", ".join(files)
        text += "; drawn by bench/plot.py"
        return text + (f"\n{extra}" if extra else "")

    def new_figure(self, metric):
        fig, ax = self.plt.subplots(figsize=(10.5, 5.8))
        fig.suptitle(self.title(), fontsize=12, fontweight="bold")
        ax.set_title(metric, fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.grid(True, which="major", color="0.85", linewidth=0.6)
        ax.grid(True, which="minor", axis="y", color="0.93", linewidth=0.4)
        ax.set_xlabel("size: nccl-tests' size, bytes of a rank's larger buffer (send or receive)")
        return fig, ax

    def finish(self, fig, ax, sizes, name, note_extra="", legend_inside=False):
        if not sizes:
            warn(f"{name}: no positive value to draw on log axes, no figure")
            self.plt.close(fig)
            return
        mt = self.ticker
        ax.xaxis.set_major_locator(mt.FixedLocator(size_ticks(sizes)))
        ax.xaxis.set_major_formatter(mt.FuncFormatter(size_label))
        ax.xaxis.set_minor_locator(mt.NullLocator())
        lo, hi = min(sizes), max(sizes)
        ax.set_xlim(lo / 1.3, hi * 1.3)
        if not legend_inside:  # room for the legend beside the plot: the axes keep their width
            longest = max((len(label) for label in ax.get_legend_handles_labels()[1]), default=0)
            fig.set_size_inches(7.6 + 0.075 * longest, fig.get_size_inches()[1])
        ax.yaxis.set_major_formatter(mt.FuncFormatter(plain_number))
        ax.yaxis.set_minor_formatter(mt.NullFormatter())
        self.plt.setp(ax.get_xticklabels(), rotation=35, ha="right", rotation_mode="anchor")
        if legend_inside:  # where the right-hand axis leaves no room beside the plot
            ax.legend(loc="lower right", fontsize=8, framealpha=0.9, handlelength=3.2)
        else:
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
                      handlelength=3.2, borderaxespad=0)
        note = self.note(note_extra)
        fig.text(0.01, 0.005, note, fontsize=7, color="0.35", va="bottom", ha="left")
        fig.tight_layout(rect=(0, 0.015 + 0.025 * (note.count("\n") + 1), 1, 1))  # the note below
        ext = "png" if self.args.png else "svg"
        path = os.path.join(self.args.out, f"{name}.{ext}")
        try:
            if ext == "svg":  # no date and no trailing blanks: the same input, the same file
                buf = io.StringIO()
                fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n")
            else:
                fig.savefig(path, format="png", dpi=130, bbox_inches="tight")
        except OSError as e:
            raise InputError(f"cannot write {path}: {e.strerror}") from None
        self.plt.close(fig)
        print(path)

    def ordered_series(self):
        """(block, series name) in legend order: by series, then by block."""
        order = list(SERIES_STYLE)
        pairs = [(b, s) for b in self.blocks for s in b.series]
        return sorted(pairs, key=lambda p: (order.index(p[1]) if p[1] in order else len(order),
                                            self.blocks.index(p[0])))

    def plot_metric(self, ax, pick):
        sizes = []
        for b, s in self.ordered_series():
            pts = [(n, pick(b, n, t, bw)) for n, t, bw in b.series[s]]
            pts = [(n, y) for n, y in pts if y is not None and math.isfinite(y) and y > 0 and n > 0]
            if not pts:
                continue
            sizes += [n for n, _ in pts]
            ax.plot([n for n, _ in pts], [y for _, y in pts], label=self.series_label(b, s),
                    color=self.colours[self.colour_of[id(b)]], linestyle=self.line_style(b),
                    marker=SERIES_STYLE.get(s, "."), markersize=4, linewidth=1.4,
                    markerfacecolor="none" if s in ("staged MPI", "in-place") else None)
        return sizes

    def latency(self, name):
        fig, ax = self.new_figure("latency")
        sizes = self.plot_metric(ax, lambda b, n, t, bw: t)
        ax.set_ylabel("time per call (µs): median over iterations\nof the slowest rank")
        self.finish(fig, ax, sizes, f"{name}-latency")

    def busbw(self, name):
        def pick(b, n, t, bw):
            f = b.bus_factor()
            return n / t / 1e3 * f if f and t > 0 else bw
        coll = self.collective
        factor = BUS_FACTOR_TEXT.get(coll, "the collective's factor")
        fig, ax = self.new_figure("bus bandwidth (nccl-tests' busbw)")
        sizes = self.plot_metric(ax, pick)
        ax.set_ylabel(f"busbw (GB/s) = size / time × {factor}" + ("\n(n ranks)" if "n" in factor else ""))
        self.finish(fig, ax, sizes, f"{name}-busbw")

    def traffic(self, name):
        drawn = [(b, [(n, t) for n, t in b.traffic if n > 0 and t > 0 and math.isfinite(t)])
                 for b in self.blocks]
        drawn = [(b, pts) for b, pts in drawn if pts]  # traffic 0: not counted (one-shot)
        if not drawn:
            return
        fig, ax = self.new_figure("dfccl's device-memory traffic against the device-to-device copy rate")
        sizes = [n for _, pts in drawn for n, _ in pts]
        top = max(t for _, pts in drawn for _, t in pts)
        for b, pts in drawn:
            ax.plot([n for n, _ in pts], [t for _, t in pts], label=self.series_label(b, "dfccl"),
                    color=self.colours[self.colour_of[id(b)]], linestyle=self.line_style(b),
                    marker="o", markersize=4, linewidth=1.4)
        rates = [b.copy_rate for b, _ in drawn if b.copy_rate]
        if rates:
            ceiling = statistics.median(rates)
            lo, hi = min(rates), max(rates)
            span = f"{lo:.0f}–{hi:.0f}" if f"{lo:.0f}" != f"{hi:.0f}" else f"{ceiling:.0f}"
            ax.axhline(ceiling, color="0.25", linestyle=(0, (6, 3)), linewidth=1.6,
                       label="the copy rate (ceiling)")
            ax.text(min(sizes), ceiling * 1.06,
                    f"ceiling: device-to-device copy rate, read+write ({span} GB/s)",
                    fontsize=8, color="0.25", va="bottom", ha="left")
            sec = ax.secondary_yaxis("right", functions=(lambda y: 100.0 * y / ceiling,
                                                          lambda p: p * ceiling / 100.0))
            sec.set_ylabel(f"% of the copy rate ({ceiling:.0f} GB/s)")
            mt = self.ticker
            sec.yaxis.set_major_locator(mt.FixedLocator([1, 2, 5, 10, 20, 50, 100, 200]))
            sec.yaxis.set_major_formatter(mt.FuncFormatter(lambda v, _p: f"{v:g}%"))
            sec.yaxis.set_minor_formatter(mt.NullFormatter())
            ax.set_ylim(top=max(top, ceiling) * 1.6)
        ax.set_ylabel("traffic (GB/s, bytes read + written)")
        note = ("traffic: the device-memory bytes the algorithm reads plus writes per second, counted "
                "step by step (gpu_ring_traffic_bytes), summed over the ranks sharing the GPU;\nL2 may "
                "serve some of them, so it can pass the copy rate; one-shot allreduces (up to "
                "DFCCL_ONESHOT_MAX) are not counted and not drawn (bench/RESULTS.md, Conventions)")
        self.finish(fig, ax, sizes, f"{name}-traffic", note, legend_inside=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="plot.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", metavar="FILE",
                    help="dfccl-bench output (text, -F csv, -F json) or gpu_bench output")
    ap.add_argument("-o", dest="out", metavar="DIR", default=".",
                    help="write the figures here (default: the current directory; created if missing)")
    ap.add_argument("--png", action="store_true", help="write PNG instead of SVG")
    ap.add_argument("--np", type=int, metavar="N", help="keep only the runs of N ranks")
    ap.add_argument("--title", metavar="TEXT",
                    help="the figures' title (default: collective, ranks, machine)")
    ap.add_argument("--machine", metavar="TEXT",
                    help="the machine, for the title (default: what the output says, e.g. the host)")
    args = ap.parse_args(argv)
    if args.np is not None and args.np < 1:
        ap.error(f"--np {args.np}: expected a rank count of at least 1")

    try:
        blocks = []
        for path in args.files:
            found = parse_file(path)
            if not found:
                warn(f"{path}: no benchmark table found")
            blocks += found
        if args.np is not None:
            for b in blocks:
                if b.ranks is None:
                    warn(f"{b.where()}: rank count unknown ({b.tool}), left out by --np {args.np}")
            blocks = [b for b in blocks if b.ranks == args.np]
        if not blocks:
            raise InputError("nothing to plot" + (f" (no run of {args.np} ranks)" if args.np else ""))

        try:
            import matplotlib
            matplotlib.use("Agg")
            matplotlib.rcParams["svg.hashsalt"] = "dfccl"  # the same SVG from the same input
            import matplotlib.pyplot as plt
            import matplotlib.ticker as ticker
        except ImportError:
            raise InputError("needs matplotlib (Debian: apt-get install python3-matplotlib, "
                             "then run it with /usr/bin/python3)") from None
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as e:
            raise InputError(f"cannot create {args.out}: {e.strerror}") from None

        several = len(args.files) > 1
        groups = {}
        for b in blocks:
            groups.setdefault((b.collective, b.dtype, b.op), []).append(b)
        colls = [k[0] for k in groups]
        for (coll, dtype, op), bs in groups.items():
            # named after its input file where it comes from one (else "plot"), then the
            # collective where the input says it (an older dfccl-bench csv does not)
            paths = {b.path for b in bs}
            stem = os.path.splitext(os.path.basename(bs[0].path))[0] if len(paths) == 1 else "plot"
            name = "-".join(w for w in (stem, coll) if w)
            if colls.count(coll) > 1:
                name += "-" + "-".join(w for w in (dtype, op) if w)
            figs = Figures(plt, ticker, bs, several, args)
            figs.latency(name)
            figs.busbw(name)
            figs.traffic(name)
    except InputError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the list of files written went to a closed pipe (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
