#!/usr/bin/env python3
"""The copies of `gdrcheck bench copy`, done through PyTorch for comparison:
same sizes, 3 warm-up and 20 timed copies between CUDA events. Prints JSON."""
import json
import sys

import torch

ITERS, WARM = 20, 3


def timed(fn, stream=None):
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    s.record()
    for _ in range(ITERS):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / 1e3 / ITERS


def main():
    big = int(sys.argv[1]) if len(sys.argv) > 1 else 4 << 30
    host = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 30
    out = {}
    x = torch.empty(big, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    t = timed(lambda: y.copy_(x))
    out["d2d"] = {"bytes": big, "gbps": big / t / 1e9, "read_write_gbps": 2 * big / t / 1e9}
    del x, y
    d = torch.empty(host, dtype=torch.uint8, device="cuda")
    d2 = torch.empty(host, dtype=torch.uint8, device="cuda")
    for kind, pin in (("pinned", True), ("pageable", False)):
        h = torch.ones(host, dtype=torch.uint8, pin_memory=pin)
        t = timed(lambda: d.copy_(h, non_blocking=pin))
        out["h2d_" + kind] = {"bytes": host, "gbps": host / t / 1e9}
        t = timed(lambda: h.copy_(d, non_blocking=pin))
        out["d2h_" + kind] = {"bytes": host, "gbps": host / t / 1e9}
    h1 = torch.ones(host, dtype=torch.uint8, pin_memory=True)
    h2 = torch.ones(host, dtype=torch.uint8, pin_memory=True)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()

    def bidir():
        with torch.cuda.stream(s1):
            d.copy_(h1, non_blocking=True)
        with torch.cuda.stream(s2):
            h2.copy_(d2, non_blocking=True)
        torch.cuda.current_stream().wait_stream(s1)
        torch.cuda.current_stream().wait_stream(s2)

    t = timed(bidir)
    out["bidir_pinned"] = {"bytes": host, "gbps": 2 * host / t / 1e9}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
