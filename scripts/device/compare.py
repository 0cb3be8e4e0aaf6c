#!/usr/bin/env python3
"""Compares gdrcheck bench nccl with nccl-tests, run side by side.

usage: compare.py DIR   (DIR holds <coll>.nccltests.N.txt and <coll>.gdrcheck.N.txt)

Both print nccl-tests' table; rows are matched by size; of several runs of a
tool the best per row counts (least time, most bandwidth). The acceptance
criteria of the native engine: at sizes >= 64 MiB gdrcheck's algbw and busbw
are at least 0.98x nccl-tests', at sizes <= 64 KiB its time at most 1.10x.
"""
import os
import re
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


def best(paths):
    """Merges runs: per size and place the least time and the most bandwidth."""
    out = {}
    for p in paths:
        for size, places in rows(p).items():
            for place, (t, a, b) in places.items():
                cur = out.setdefault(size, {}).get(place)
                if cur is None:
                    out[size][place] = (t, a, b)
                else:
                    out[size][place] = (min(cur[0], t), max(cur[1], a), max(cur[2], b))
    return out


def main():
    d = sys.argv[1]
    files = os.listdir(d)
    colls = sorted({f.split(".")[0] for f in files if ".nccltests." in f})
    ok = True
    print("%-15s %12s %5s %10s %10s %7s %9s %9s %7s %9s %9s %7s" % (
        "collective", "size", "place", "t_ref(us)", "t_gdr(us)", "t_x", "alg_ref", "alg_gdr", "alg_x", "bus_ref", "bus_gdr", "bus_x"))
    for c in colls:
        ref = best([os.path.join(d, f) for f in files if f.startswith(c + ".nccltests.") and f.endswith(".txt")])
        gdr = best([os.path.join(d, f) for f in files if f.startswith(c + ".gdrcheck.") and f.endswith(".txt")])
        if not ref or not gdr:
            print("%s: missing rows (ref %d, gdrcheck %d)" % (c, len(ref), len(gdr)))
            ok = False
            continue
        for size in sorted(ref):
            if size not in gdr:
                print("%s %d: no gdrcheck row" % (c, size))
                ok = False
                continue
            for place in ("oop", "ip"):
                if place not in ref[size] or place not in gdr[size]:
                    continue
                (tr, ar, br), (tg, ag, bg) = ref[size][place], gdr[size][place]
                tx = tg / tr if tr > 0 else float("nan")
                ax = ag / ar if ar > 0 else float("nan")
                bx = bg / br if br > 0 else float("nan")
                verdict = ""
                if size <= 64 << 10:
                    if tr > 0 and tx > 1.10:
                        verdict = "TIME>1.10"
                        ok = False
                elif size >= 64 << 20:
                    if ar > 0 and ax < 0.98:
                        verdict = "ALGBW<0.98"
                        ok = False
                    if br > 0 and bx < 0.98:
                        verdict += " BUSBW<0.98"
                        ok = False
                else:
                    continue
                print("%-15s %12d %5s %10.2f %10.2f %7.3f %9.2f %9.2f %7.3f %9.2f %9.2f %7.3f %s" % (
                    c, size, place, tr, tg, tx, ar, ag, ax, br, bg, bx, verdict))
    print("ACCEPTANCE: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
