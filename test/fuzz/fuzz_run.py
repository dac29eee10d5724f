#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The deadlock fuzzer's driver: runs the random programs of test/fuzz/fuzz.c for a
range of seeds, natively (fz_native, the dfccl API) and through the Open MPI component
(fz_mpi, plain MPI with mca_coll_dfccl and coll_dfccl_host_buffers=1), classifies each
run, prints every failing seed with a one-line reproducer and shrinks the failing
program (delta debugging over its collectives, then its communicators) while it still
fails the same way.

  fuzz_run.py [--build DIR] [--seeds A:B] [--mode native|mpi|both] [--np 2,3,4]
              [--time-limit SEC] [--timeout SEC] [--stall SEC] [--faults none|late|kill|any]
              [--env VAR=VALUE ...] [--expect-hang] [--no-shrink] [--shrink-time SEC]
              [--expect-wrong] [--extra ARGS] [--device] [--name NAME] [--quiet]

  --seeds A:B     seeds A .. B-1 (one seed: --seeds 17)
  --np LIST       seed s runs on LIST[s mod len(LIST)] ranks
  --time-limit    no new program starts after SEC seconds (default: none)
  --timeout       wall clock of one program (default 90 s): past it the run is a HANG
  --stall         the programs' own watchdog: HANG after SEC s without progress (20)
  --env VAR=VAL   passed to every rank (mpirun -x), e.g. DFCCL_PREEMPT=0
  --expect-hang   the bite check (run with DFCCL_PREEMPT=0): stop at the first HANG and
                  pass; fail if none of the seeds hangs
  --device        fz_native_dev --device (GPU machines): device buffers, and device
                  synchronizations (cudaDeviceSynchronize, cudaFree, the legacy stream)
                  between submissions while collectives are pending; native only
  --expect-wrong  the oracle's check (with --extra "--inject-wrong OP"): the same for a
                  WRONG result
  --extra ARGS    more arguments for every program
  --mpirun-args A more arguments for mpirun (e.g. "--bind-to none")
  --name NAME     the verdict line at the end: "PASS: NAME (...)" or "FAIL: NAME (...)"

Outcomes per program: ok; HANG (the watchdog fired, exit 3, or the wall clock ran out);
WRONG (a MISMATCH or OVERRUN line: an element differs from the host reference); ERROR
(any other failure: an error returned, a crash, no OK line). With --faults kill each
program loses a rank (mpirun --enable-recovery): ok means every survivor printed
FZ-SURVIVOR with at least one failed collective and no wrong one.

Each failing seed prints a line "FAIL: fuzz[MODE] seed=S np=N: KIND (...)" followed by
"  reproduce: <command>", and after shrinking "  shrunk: <command>" and the program.
The last line is a summary: programs run, hangs, wrong results, errors, time per program.
"""

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--seeds", default="1:21")
    ap.add_argument("--mode", default="both", choices=["native", "mpi", "both"])
    ap.add_argument("--np", default="2,3,4")
    ap.add_argument("--time-limit", type=float, default=0)
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--stall", type=float, default=20)
    ap.add_argument("--faults", default="late", choices=["none", "late", "kill", "any"])
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--expect-hang", action="store_true")
    ap.add_argument("--expect-wrong", action="store_true")
    ap.add_argument("--extra", default="")
    ap.add_argument("--mpirun-args", default="")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--shrink-time", type=float, default=300)
    ap.add_argument("--name", default="")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--logdir", default="")
    ap.add_argument("--device", action="store_true")
    return ap.parse_args()


class Runner:
    def __init__(self, a):
        self.a = a
        self.build = os.path.abspath(a.build)
        self.bindir = os.path.join(self.build, "test", "fuzz")
        self.runbin = self.bindir  # copied into the log directory by snapshot()
        self.logdir = a.logdir or tempfile.mkdtemp(prefix="dfccl-fuzz.")
        os.makedirs(self.logdir, exist_ok=True)
        # Open MPI's shared-memory segments in a directory of our own: other suites that
        # clean /dev/shm after a killed job must not take ours
        self.vader = os.path.join(self.logdir, "vader")
        os.makedirs(self.vader, exist_ok=True)
        out = subprocess.run(["ompi_info", "--path", "pkglibdir"], capture_output=True, text=True).stdout
        self.sysdir = out.split(":", 1)[1].strip() if ":" in out else ""
        self.compdir = os.path.join(self.build, "ompi_coll_dfccl", ".libs")
        self.libdir = os.path.join(self.build, ".libs")
        # every rank of this driver carries this mark: leftovers are found by it, so that
        # two drivers running at once never kill each other's ranks
        self.mark = "FZ_RUN_ID=%d.%d" % (os.getpid(), int(time.time() * 1000))

    def cmd(self, mode, seed, np_, keep_ops=None, keep_comms=None, extra=()):
        c = ["mpirun", "--oversubscribe", "-np", str(np_), "--mca", "btl", "self,vader",
             "--mca", "btl_vader_single_copy_mechanism", "none", "--mca", "btl_vader_backing_directory",
             self.vader]
        if os.getuid() == 0:
            c.insert(1, "--allow-run-as-root")
        if self.a.faults in ("kill", "any"):
            c += ["--enable-recovery"]
        c += shlex.split(self.a.mpirun_args)
        for e in self.a.env:
            c += ["-x", e]
        c += ["-x", self.mark]
        if mode == "mpi":
            c += ["--mca", "mca_base_component_path", self.compdir + ":" + self.sysdir,
                  "--mca", "coll_dfccl_host_buffers", "1", "-x", "LD_LIBRARY_PATH=" + self.libdir]
            prog = os.path.join(self.bindir, "fz_mpi")
        elif self.a.device:
            prog = os.path.join(self.bindir, "fz_native_dev")
        else:
            prog = os.path.join(self.bindir, "fz_native")
        c += [prog, "--seed", str(seed), "--stall", "%g" % self.a.stall]
        if self.a.device:
            c += ["--device"]
        faults = self.a.faults
        if faults != "none":
            c += ["--faults", faults]
        c += shlex.split(self.a.extra)
        if keep_ops is not None:
            c += ["--keep-ops", ",".join(map(str, keep_ops)) or "-1"]
        if keep_comms is not None:
            c += ["--keep-comms", ",".join(map(str, keep_comms)) or "-1"]
        c += list(extra)
        return c

    def snapshot(self, names):
        """Run copies of the programs: a rebuild during a long run then changes nothing
        (the reproducers still name the build's programs)."""
        self.runbin = os.path.join(self.logdir, "bin")
        os.makedirs(self.runbin, exist_ok=True)
        for n in names:
            shutil.copy2(os.path.join(self.bindir, n), os.path.join(self.runbin, n))

    def to_run(self, cmd):
        return [os.path.join(self.runbin, os.path.basename(x)) if os.path.dirname(x) == self.bindir else x
                for x in cmd]

    def kill_leftovers(self):
        """Kill, by pid, ranks of this driver's programs a killed mpirun left behind."""
        mine = {os.path.join(self.runbin, p) for p in ("fz_native", "fz_mpi", "fz_native_dev")}
        mark = self.mark.encode()
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                exe = os.readlink("/proc/%s/exe" % d)
                if exe not in mine:
                    continue
                with open("/proc/%s/environ" % d, "rb") as f:
                    ours = mark in f.read().split(b"\0")
            except OSError:
                continue
            if ours:
                try:
                    os.kill(int(d), signal.SIGKILL)
                except OSError:
                    pass

    def run(self, cmd, log):
        """Run one program: (outcome, reason, seconds, output)."""
        t0 = time.time()
        env = dict(os.environ)
        if os.getuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        with open(log, "w") as f:
            p = subprocess.Popen(self.to_run(cmd), stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                 start_new_session=True)
            timed_out = False
            try:
                rc = p.wait(timeout=self.a.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(p.pid, sig)
                    except OSError:
                        pass
                    try:
                        p.wait(timeout=5)
                        break
                    except subprocess.TimeoutExpired:
                        pass
                rc = p.returncode if p.returncode is not None else 124
        self.kill_leftovers()
        dt = time.time() - t0
        with open(log, errors="replace") as f:
            out = f.read()
        return self.classify(rc, timed_out, out, cmd) + (dt, out)

    def classify(self, rc, timed_out, out, cmd):
        lines = out.splitlines()
        hang = [ln for ln in lines if ln.startswith("HANG:")]
        wrong = [ln for ln in lines if "MISMATCH" in ln or "OVERRUN" in ln]
        if wrong:
            return "WRONG", wrong[0].strip()[:300]
        if hang:
            return "HANG", hang[0][:300]
        if timed_out:
            return "HANG", "no end after %g s (wall clock)" % self.a.timeout
        if "--faults" in cmd and cmd[cmd.index("--faults") + 1] in ("kill", "any"):
            np_ = int(cmd[cmd.index("-np") + 1])
            surv = [ln for ln in lines if ln.startswith("FZ-SURVIVOR")]
            victim = [ln for ln in lines if ln.startswith("FZ-VICTIM")]
            bad = [ln for ln in surv if " 0 failed" in ln or " 0 wrong" not in ln]
            if victim and len(surv) == np_ - 1 and not bad:
                return "ok", surv[0].split("first error: ")[-1][:160]
            if not victim and "OK fuzz" in out:
                return "ok", "no rank killed (the victim had nothing to do in its phase)"
            why = bad[0] if bad else "%d of %d survivors reported, victim %s" % (len(surv), np_ - 1,
                                                                                  "died" if victim else "absent")
            return "ERROR", "kill: " + why[:250]
        if rc == 0 and any(ln.startswith("OK fuzz") for ln in lines):
            return "ok", ""
        fails = [ln for ln in lines if "FAIL" in ln or "ERROR" in ln or "signal" in ln or "error" in ln]
        return "ERROR", "exit %s: %s" % (rc, (fails[0].strip() if fails else "no OK line")[:300])

    def count(self, mode, seed, np_):
        cmd = self.cmd(mode, seed, np_, extra=["--count"])
        out = subprocess.run(self.to_run(cmd), capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")).stdout
        res = None
        for ln in out.splitlines():
            if ln.startswith("ops "):
                f = ln.split()
                res = [int(f[1]), int(f[3]), []]
            elif ln.startswith("op-comms") and res:
                res[2] = [int(x) for x in ln.split()[1:]]
        return res

    def shrink(self, mode, seed, np_, kind):
        """Delta debugging (ddmin): the smallest sets of collectives, then communicators,
        whose program still fails with @kind."""
        n = self.count(mode, seed, np_)
        if not n:
            return None
        nops, ncomms, op_comm = n
        deadline = time.time() + self.a.shrink_time
        tries = [0]
        log = os.path.join(self.logdir, "shrink_%s_%d.log" % (mode, seed))

        def fails(ops, comms):
            if time.time() > deadline:
                return False
            tries[0] += 1
            out = self.run(self.cmd(mode, seed, np_, ops, comms), log)
            return out[0] == kind

        def ddmin(items, test):
            k = 2
            while len(items) >= 2 and time.time() < deadline:
                size = (len(items) + k - 1) // k
                chunks = [items[i:i + size] for i in range(0, len(items), size)]
                done = False
                for ch in chunks:  # a chunk alone
                    if test(ch):
                        items, k, done = ch, 2, True
                        break
                if not done:
                    for i in range(len(chunks)):  # everything but a chunk
                        rest = [x for j, c in enumerate(chunks) if j != i for x in c]
                        if test(rest):
                            items, k, done = rest, max(k - 1, 2), True
                            break
                if not done:
                    if k >= len(items):
                        break
                    k = min(len(items), 2 * k)
            return items

        ops = list(range(nops))
        comms = list(range(ncomms))
        ops = ddmin(ops, lambda o: fails(o, comms))
        # communicators none of the remaining collectives uses: all at once first
        used = sorted({op_comm[o] for o in ops if o < len(op_comm)})
        if len(used) < len(comms) and fails(ops, used):
            comms = used
        comms = ddmin(comms, lambda c: fails(ops, c))
        return ops, comms, tries[0]

    def show(self, cmd):
        env = ""
        if os.getuid() == 0:
            env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
        # the private segment directory is the driver's business: left out
        i = cmd.index("btl_vader_backing_directory")
        cmd = cmd[:i - 1] + cmd[i + 2:]
        i = cmd.index(self.mark)
        cmd = cmd[:i - 1] + cmd[i + 1:]
        return env + " ".join(shlex.quote(x) for x in cmd)


def main():
    a = parse_args()
    r = Runner(a)
    if ":" in a.seeds:
        lo, hi = (int(x) for x in a.seeds.split(":"))
    else:
        lo = int(a.seeds)
        hi = lo + 1
    nps = [int(x) for x in a.np.split(",")]
    modes = ["native", "mpi"] if a.mode == "both" else [a.mode]
    if a.device:
        modes = ["native"]  # fz_native_dev: the native API on device buffers
    for m in modes:
        prog = os.path.join(r.bindir, "fz_mpi" if m == "mpi" else "fz_native_dev" if a.device else "fz_native")
        if not os.access(prog, os.X_OK):
            print("FAIL: %s (missing program %s: build with make check TESTS=)" % (a.name or "fuzz", prog))
            return 1
    if "mpi" in modes and not os.path.isfile(os.path.join(r.compdir, "mca_coll_dfccl.so")):
        print("FAIL: %s (the component %s/mca_coll_dfccl.so is not built)" % (a.name or "fuzz", r.compdir))
        return 1
    r.snapshot(["fz_mpi" if m == "mpi" else "fz_native_dev" if a.device else "fz_native" for m in modes])
    t0 = time.time()
    stats = {"programs": 0, "ok": 0, "HANG": 0, "WRONG": 0, "ERROR": 0, "secs": 0.0}
    per_mode = {m: 0 for m in modes}
    found = []
    hang_found = None
    stopped = False
    for seed in range(lo, hi):
        if stopped:
            break
        np_ = nps[seed % len(nps)]
        for m in modes:
            if a.time_limit and time.time() - t0 > a.time_limit:
                stopped = True
                break
            cmd = r.cmd(m, seed, np_)
            log = os.path.join(r.logdir, "%s_%d.log" % (m, seed))
            kind, why, dt, out = r.run(cmd, log)
            stats["programs"] += 1
            per_mode[m] += 1
            stats["secs"] += dt
            stats[kind] += 1
            tag = "fuzz[%s] seed=%d np=%d" % (m, seed, np_)
            if kind == "ok":
                if not a.quiet:
                    print("  ok %s (%.1f s)%s" % (tag, dt, (": " + why) if why else ""), flush=True)
                continue
            if (a.expect_hang and kind == "HANG") or (a.expect_wrong and kind == "WRONG"):
                hang_found = (tag, why, dt, cmd)
                print("  %s %s after %.1f s (expected): %s" % (kind, tag, dt, why), flush=True)
                print("  reproduce: %s" % r.show(cmd), flush=True)
                if not a.no_shrink:
                    res = r.shrink(m, seed, np_, kind)
                    if res:
                        ops, comms, tries = res
                        sc = r.cmd(m, seed, np_, ops, comms)
                        print("  shrunk in %d runs to %d collectives on %d communicators: %s" %
                              (tries, len(ops), len(comms), r.show(sc + ["--print"])), flush=True)
                        r.run(sc + ["--print"], log + ".shrunk")
                        with open(log + ".shrunk") as f:
                            for ln in f:
                                if ln.startswith(("fuzz program", "  comm", "  op", "HANG")) or "MISMATCH" in ln:
                                    print("    " + ln.rstrip())
                stopped = True
                break
            if a.expect_hang or a.expect_wrong:
                # with preemption off a program may also fail otherwise; report, go on
                print("  %s %s: %s (log %s)" % (kind, tag, why, log), flush=True)
                continue
            found.append((kind, tag))
            print("FAIL: %s: %s (%s; %.1f s; log %s)" % (tag, kind, why, dt, log), flush=True)
            print("  reproduce: %s" % r.show(cmd), flush=True)
            if not a.no_shrink:
                res = r.shrink(m, seed, np_, kind)
                if res:
                    ops, comms, tries = res
                    sc = r.cmd(m, seed, np_, ops, comms)
                    print("  shrunk in %d runs to %d collectives on %d communicators: %s" %
                          (tries, len(ops), len(comms), r.show(sc + ["--print"])), flush=True)
    n = stats["programs"]
    mean = stats["secs"] / n if n else 0
    summary = "%d programs (%s), %d hangs, %d wrong results, %d errors, %.2f s per program, %.0f s in all" % (
        n, ", ".join("%s %d" % (m, per_mode[m]) for m in modes), stats["HANG"], stats["WRONG"], stats["ERROR"],
        mean, time.time() - t0)
    if found:
        summary += "; seeds: " + ", ".join("%s %s" % (k, t) for k, t in found)
    print("fuzz: " + summary, flush=True)
    name = a.name or "fuzz seeds %s" % a.seeds
    if a.expect_hang or a.expect_wrong:
        if hang_found:
            print("PASS: %s (%s %s after %.1f s, %d programs tried: %s)" % (
                name, hang_found[0], "hung" if a.expect_hang else "wrong, as injected", hang_found[2], n,
                hang_found[1][:150]))
            return 0
        print("FAIL: %s (no %s in %d programs with %s)" % (name, "hang" if a.expect_hang else "wrong result", n,
                                                         " ".join(a.env + [a.extra])))
        return 1
    if found or n == 0:
        if n == 0:
            print("FAIL: %s (no program ran)" % name)
        return 1
    print("PASS: %s (%s)" % (name, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
