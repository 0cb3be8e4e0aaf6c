#!/usr/bin/env python3
"""Compares gdrcheck bench nccl with nccl-tests, run side by side.

usage: compare.py DIR   (DIR holds <coll>.nccltests.N.txt and <coll>.gdrcheck.N.txt)

Both print nccl-tests' table; rows are matched by size. Of several runs of a
tool, two statistics per row: the best (least time, most bandwidth) and the
median. The acceptance criteria of the native engine: at sizes >= 64 MiB
gdrcheck's algbw and busbw are at least 0.98x nccl-tests', at sizes <= 64 KiB
its time at most 1.10x. Small operations on a VM vary by +-25% between
identical runs, whole runs at a time, so the best of a few runs compares luck
as much as tools; the median is printed beside it and judged too.
"""
import os
import re
import statistics
import sys

ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)\s+(.*)$")


def cells(rest):
    f = rest.split()
    # out-of-place: time algbw busbw wrong ; in-place: the same, or blank (N/A)
    out = {}
    if len(f) >= 4:
        out["oop"] = (float(f[0]), float(f[1]), float(f[2]))
    if len(f) >= 8:
        out["ip"] = (float(f[4]), float(f[5]), float(f[6]))
    return out


def rows(path):
    res = {}
    with open(path, errors="replace") as fh:
        for line in fh:
            m = ROW.match(line.rstrip("\n"))
            if not m:
                continue
            try:
                res[int(m.group(1))] = cells(m.group(6))
            except ValueError:
                continue
    return res


def collect(paths):
    """Per size and place, the (time, algbw, busbw) of every run."""
    out = {}
    for p in paths:
        for size, places in rows(p).items():
            for place, v in places.items():
                out.setdefault(size, {}).setdefault(place, []).append(v)
    return out


def best(runs):
    return (min(r[0] for r in runs), max(r[1] for r in runs), max(r[2] for r in runs))


def median(runs):
    return tuple(statistics.median(r[i] for r in runs) for i in range(3))


def judge(size, ref, gdr):
    """Ratios (time, algbw, busbw) and the verdict, "" when within bounds."""
    (tr, ar, br), (tg, ag, bg) = ref, gdr
    tx = tg / tr if tr > 0 else float("nan")
    ax = ag / ar if ar > 0 else float("nan")
    bx = bg / br if br > 0 else float("nan")
    verdict = ""
    if size <= 64 << 10:
        if tr > 0 and tx > 1.10:
            verdict = "TIME>1.10"
    elif size >= 64 << 20:
        if ar > 0 and ax < 0.98:
            verdict = "ALGBW<0.98"
        if br > 0 and bx < 0.98:
            verdict += " BUSBW<0.98"
    return (tx, ax, bx), verdict.strip()


def main():
    d = sys.argv[1]
    files = os.listdir(d)
    colls = sorted({f.split(".")[0] for f in files if ".nccltests." in f})
    ok = {"best": True, "median": True}
    print("reference (ref): %s; measured (gdr): gdrcheck" % os.environ.get("REF_LABEL", "nccl-tests"))
    print("%-15s %12s %5s %4s %10s %10s %7s %7s %7s %10s %10s %7s  %s" % (
        "collective", "size", "place", "runs", "t_ref(us)", "t_gdr(us)", "t_x", "alg_x", "bus_x",
        "tmed_ref", "tmed_gdr", "tmed_x", "verdict (best / median)"))
    for c in colls:
        ref = collect([os.path.join(d, f) for f in files if f.startswith(c + ".nccltests.") and f.endswith(".txt")])
        gdr = collect([os.path.join(d, f) for f in files if f.startswith(c + ".gdrcheck.") and f.endswith(".txt")])
        if not ref or not gdr:
            print("%s: missing rows (ref %d, gdrcheck %d)" % (c, len(ref), len(gdr)))
            ok = {k: False for k in ok}
            continue
        for size in sorted(ref):
            if size not in gdr:
                print("%s %d: no gdrcheck row" % (c, size))
                ok = {k: False for k in ok}
                continue
            if 64 << 10 < size < 64 << 20:
                continue
            for place in ("oop", "ip"):
                if place not in ref[size] or place not in gdr[size]:
                    continue
                r, g = ref[size][place], gdr[size][place]
                (tx, ax, bx), vb = judge(size, best(r), best(g))
                (mx, _, _), vm = judge(size, median(r), median(g))
                if vb:
                    ok["best"] = False
                if vm:
                    ok["median"] = False
                print("%-15s %12d %5s %4d %10.2f %10.2f %7.3f %7.3f %7.3f %10.2f %10.2f %7.3f  %s / %s" % (
                    c, size, place, min(len(r), len(g)), best(r)[0], best(g)[0], tx, ax, bx,
                    median(r)[0], median(g)[0], mx, vb or "ok", vm or "ok"))
    print("ACCEPTANCE (best of runs): %s" % ("PASS" if ok["best"] else "FAIL"))
    print("ACCEPTANCE (median of runs): %s" % ("PASS" if ok["median"] else "FAIL"))
    return 0 if ok["best"] and ok["median"] else 1


if __name__ == "__main__":
    sys.exit(main())
