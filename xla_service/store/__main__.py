"""``python -m xla_service.store {stats,verify,clear,export}``: manage the experience store.

The store is the one ``$XLA_GYM_STORE`` names (default
``~/.cache/xla-gym/experience.sqlite``), or ``--store PATH``. ``verify``
checks a SQLite file itself first (``integrity.py``): a damaged one is
reported (exit status 1) and ``verify --repair`` salvages it (``salvage.py``).
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from xla_service.store import STORE_VARIABLE, default_path, open_store, sqlite_path
from xla_service.store.export import export_transitions
from xla_service.store.integrity import check_file, is_damage
from xla_service.store.salvage import salvage_file

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m xla_service.store",
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--store",
        default=None,
        help=f"the store's file (default: ${STORE_VARIABLE}, else {default_path()})",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("stats", help="entries by kind, size, semantics (jaxlib, engine, catalog, count rule)")
    verify = commands.add_parser(
        "verify", help="check the file, then every row's checksum; exit status 1 if the file or a row is bad"
    )
    verify.add_argument(
        "--repair",
        action="store_true",
        help="delete the bad rows; a damaged file: copy what can be read into a new one, the old one kept aside",
    )
    commands.add_parser("clear", help="delete every entry (all versions) and reclaim the space")
    export = commands.add_parser("export", help="write the stored steps as NumPy arrays (xla_service/store/export.py)")
    export.add_argument("out", type=Path, help="the .npz file to write")
    serve = commands.add_parser(
        "serve-postgres", help="start a PostgreSQL server for a store shared by many machines; print its URL"
    )
    serve.add_argument("folder", type=Path, help="its data folder (made on first use)")
    serve.add_argument("--port", type=int, default=5432, help="port to listen on")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    stop = commands.add_parser("stop-postgres", help="stop the server that serve-postgres started")
    stop.add_argument("folder", type=Path, help="its data folder")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command in ("serve-postgres", "stop-postgres"):
        from xla_service.store import postgres_server

        if args.command == "stop-postgres":
            postgres_server.stop(args.folder)
            return 0
        url = postgres_server.start(args.folder, args.port, args.host)
        print(f"XLA_GYM_STORE={url}")
        return 0
    try:
        return _run(args)
    except sqlite3.DatabaseError as e:
        if not is_damage(e):
            raise
        where = sqlite_path(args.store)
        print(f"The experience store {where} is damaged ({e}): `verify` says where, `verify --repair` salvages it",
              file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    salvaged: dict[str, Any] = {}
    path = sqlite_path(args.store)
    if args.command == "verify" and path is not None and path.exists():
        check = check_file(path)
        if not check.ok:
            print(check.describe())
            if not args.repair:
                print("`verify --repair` copies what can be read into a new file and keeps this one aside")
                return 1
            salvage = salvage_file(path)
            print(salvage.describe())
            salvaged = {"salvaged": salvage.counts(), "damaged_file": str(salvage.aside)}
    store = open_store(args.store)
    if store is None:
        print(f"The experience store is off (${STORE_VARIABLE})", file=sys.stderr)
        return 1
    try:
        if args.command == "stats":
            print(json.dumps(store.stats(), indent=1, sort_keys=True))
        elif args.command == "verify":
            report = store.verify(repair=args.repair)
            print(json.dumps({**report, **salvaged}, sort_keys=True))
            return 1 if (report["bad_results"] or report["bad_states"]) and not args.repair else 0
        elif args.command == "clear":
            store.clear()
            print(f"cleared {store.location}")
        elif args.command == "export":
            rows = export_transitions(store, args.out)
            print(f"{rows} transitions -> {args.out}")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
