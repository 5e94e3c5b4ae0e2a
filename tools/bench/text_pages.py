#!/usr/bin/env python3
"""Which pages of a running kapi's code are mapped: in all, in the start-up range that it
releases once started (between `kapi_startup_code_begin` and `kapi_startup_code_end`, see
crates/kapi/src/startup_code.rs), and in which runs. Reads /proc/PID/pagemap.
usage: text_pages.py <pid>"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from gen_link_order import text_symbols  # noqa: E402

PAGE = 4096


def text_mapping(pid):
    """The executable's code mapping: (start, end, path)."""
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split()
        if len(parts) == 6 and parts[1] == "r-xp" and parts[5].startswith("/"):
            start, end = (int(x, 16) for x in parts[0].split("-"))
            return start, end, parts[5]
    sys.exit("no executable code mapping")


def markers(binary):
    """The addresses of the two markers, or None when the binary has none."""
    symbols = text_symbols(binary)
    begin, end = (symbols.get(f"kapi_startup_code_{m}") for m in ("begin", "end"))
    return None if begin is None or end is None else (begin, end)


def mapped_pages(pid, start, end):
    """The addresses of the mapped pages in [start, end)."""
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        pagemap.seek(start // PAGE * 8)
        data = pagemap.read((end - start) // PAGE * 8)
    return [start + i * PAGE for i in range(len(data) // 8)
            if struct.unpack_from("<Q", data, i * 8)[0] >> 63]


def main():
    pid = int(sys.argv[1])
    start, end, binary = text_mapping(pid)
    pages = mapped_pages(pid, start, end)
    mapped, size = len(pages) * PAGE // 1024, (end - start) // 1024
    print(f"{binary}: {mapped} KiB of {size} KiB of code mapped")
    bounds = markers(binary)
    if bounds:
        # The whole pages between the markers: those kapi releases.
        first, last = -(-bounds[0] // PAGE) * PAGE, bounds[1] // PAGE * PAGE
        inside = sum(1 for p in pages if first <= p < last)
        print(f"released range {first:#x}-{last:#x} ({(last - first) // 1024} KiB): "
              f"{inside * PAGE // 1024} KiB mapped")
    run_start = previous = None
    for page in pages + [None]:
        if page is not None and previous is not None and page == previous + PAGE:
            previous = page
            continue
        if run_start is not None:
            print(f"  {run_start:#x} {(previous + PAGE - run_start) // 1024} KiB")
        run_start = previous = page


if __name__ == "__main__":
    main()
