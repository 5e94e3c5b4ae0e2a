#!/usr/bin/env python3
"""Groups a heaptrack profile's peak memory by the innermost frame outside the allocator
and the standard collections, as docs/PERFORMANCE.md's heap tables are made.

usage: heaptrack_print -f PROFILE.zst --flamegraph-cost-type peak -F stacks.txt
       heap_by_frame.py stacks.txt [rows]

Profile a release build with the `#[global_allocator]` lines of crates/kapi/src/main.rs
commented out (heaptrack sees only the system allocator). Frames are Rust v0 symbols,
demangled with c++filt."""
import collections
import re
import subprocess
import sys

# Files of frames that only allocate or hold: the frame that asked for the memory is the
# first one outside them.
PLUMBING = {
    "", "alloc.rs", "raw_vec.rs", "mod.rs", "vec.rs", "boxed.rs", "sync.rs", "rc.rs",
    "map.rs", "set.rs", "string.rs", "spec_from_iter.rs", "spec_from_iter_nested.rs",
    "iterator.rs", "collect.rs", "raw.rs", "spec_extend.rs", "option.rs", "result.rs",
    "function.rs", "slice.rs", "borrow.rs", "clone.rs", "convert.rs", "bytes_mut.rs",
    "bytes.rs", "mem.rs", "lib.rs", "read.rs", "de.rs", "value.rs", "ser.rs", "index.rs",
    "fold.rs", "adapters.rs", "btree.rs", "node.rs", "entry.rs", "fmt.rs", "str.rs",
    "traits.rs", "layout.rs", "intrinsics.rs", "ptr.rs", "cell.rs", "shim.rs", "hash.rs",
    "impls.rs",
}


def main():
    path = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    stacks = []
    frames = set()
    for line in open(path):
        stack, _, cost = line.rstrip("\n").rpartition(" ")
        stacks.append((stack.split(";"), int(cost)))
        frames.update(stacks[-1][0])
    frames = sorted(frames)
    names = [re.sub(r" \([^)]*\)$", "", f) for f in frames]
    files = [(re.search(r"\(([^)]*)\)$", f) or [None, ""])[1] for f in frames]
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                               text=True, check=True).stdout.split("\n")
    frame = {f: (re.sub(r"\[[0-9a-f]+\]", "", d), file)
             for f, d, file in zip(frames, demangled, files)}
    totals = collections.Counter()
    for stack, cost in stacks:
        owner = "(allocator only)"
        for f in reversed(stack):
            name, file = frame[f]
            if file not in PLUMBING:
                owner = f"{name[:60]} ({file})"
                break
        totals[owner] += cost
    for owner, cost in totals.most_common(rows):
        print(f"{cost / 1e6:7.2f} MB  {owner}")


if __name__ == "__main__":
    main()
