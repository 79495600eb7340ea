#!/usr/bin/env python3
"""Fail if a file over 1 MB is tracked by git and not in the allow-list.

The sizes are those of the blobs in git's index (``git ls-files``), what a
commit would hold, not of the working tree. The allow-list,
``scripts/big_files_allowed.txt``, holds one path a line (a line starting
with ``#``, or a tail after `` #``, is a comment): the files over the limit
already tracked when the check came in. Run by ``.ci/run`` after the tests:

    python scripts/check_big_files.py [--root DIR] [--limit BYTES] [--allow FILE]
    python scripts/check_big_files.py --write-allow-list   # record today's big files (once)

Exit status 0 if every tracked file over the limit is allowed, 1 otherwise
(the offending files are listed), 2 on bad arguments or outside a git checkout.
Standard library only.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

__all__ = ["LIMIT", "allowed", "main", "tracked_sizes"]

LIMIT = 1_000_000
ALLOW = Path(__file__).resolve().parent / "big_files_allowed.txt"


def tracked_sizes(root: Path) -> dict[str, int]:
    """Path -> size in bytes of every file in ``root``'s git index (submodules left out)."""
    listing = subprocess.run(["git", "-C", str(root), "ls-files", "-s", "-z"], capture_output=True, check=True).stdout
    entries: list[tuple[bytes, str]] = []
    for entry in filter(None, listing.split(b"\0")):
        meta, path = entry.split(b"\t", 1)
        mode, blob, _stage = meta.split()
        if mode != b"160000":  # a submodule's commit, not a file
            entries.append((blob, path.decode()))
    if not entries:
        return {}
    sizes = subprocess.run(["git", "-C", str(root), "cat-file", "--batch-check=%(objectsize)"],
                           input=b"".join(blob + b"\n" for blob, _ in entries), capture_output=True, check=True)
    return {path: int(size) for (_, path), size in zip(entries, sizes.stdout.split(), strict=True)}


def allowed(path: Path) -> set[str]:
    """The paths of the allow-list file (blank lines, ``#`` lines and `` # `` tails skipped); none if it is missing."""
    if not path.is_file():
        return set()
    lines = (line.strip() for line in path.read_text().splitlines())
    return {line.split(" #", 1)[0].strip() for line in lines if line and not line.startswith("#")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the git checkout (default: this one)")
    parser.add_argument("--limit", type=int, default=LIMIT, help="largest size allowed, in bytes (default: %(default)s)")
    parser.add_argument("--allow", type=Path, default=ALLOW, help="the allow-list file (default: %(default)s)")
    parser.add_argument("--write-allow-list", action="store_true", help="write every tracked file over the limit to --allow, then pass")
    args = parser.parse_args(argv)
    if args.limit < 1:
        parser.error(f"--limit: expected a positive number of bytes, got {args.limit}")
    try:
        sizes = tracked_sizes(args.root)
    except (subprocess.CalledProcessError, FileNotFoundError) as error:
        print(f"check_big_files: expected a git checkout at {args.root}: {error}", file=sys.stderr)
        return 2
    big = {path: size for path, size in sizes.items() if size > args.limit}
    if args.write_allow_list:
        lines = [f"{path}  # {size / 1e6:.1f} MB" for path, size in sorted(big.items())]
        header = f"# Tracked files over {args.limit} bytes when scripts/check_big_files.py came in: no other may be added.\n"
        args.allow.write_text(header + "".join(line + "\n" for line in lines))
        print(f"wrote {len(big)} paths to {args.allow}")
        return 0
    refused = {path: size for path, size in big.items() if path not in allowed(args.allow)}
    if refused:
        print(f"{len(refused)} tracked file(s) over {args.limit} bytes, not in {args.allow}:", file=sys.stderr)
        for path, size in sorted(refused.items()):
            print(f"  {path} ({size / 1e6:.1f} MB)", file=sys.stderr)
        print("keep run artifacts out of git (a runs folder, $XLA_GYM_RUNS), or shrink the file", file=sys.stderr)
        return 1
    print(f"no tracked file over {args.limit} bytes outside the allow-list ({len(big)} allowed, {len(sizes)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
