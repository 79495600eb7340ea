"""A dataclass of arguments as a command line (CleanRL style): every field a
``--kebab-case`` flag, the string under the field its help, defaults shown; and
what else a run records about its setting (:func:`experience_store`)."""
from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import os
import urllib.parse
from typing import Any

__all__ = ["dataclass_parser", "experience_store", "field_docs"]

_TYPES = {"int": int, "float": float, "str": str}


def field_docs(cls: type) -> dict[str, str]:
    """The string literal under each field of the dataclass ``cls`` and of the dataclasses it extends."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's docstring wins
        if not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(inspect.getsource(klass)).body[0].body  # type: ignore[attr-defined]
        docs.update({
            node.target.id: str(following.value.value)
            for node, following in zip(body, body[1:])
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
        })
    return docs


def dataclass_parser(cls: Any, description: str) -> argparse.ArgumentParser:
    """A parser with a flag for every field of ``cls``: ``bool`` fields as
    ``--x/--no-x``, ``int``, ``float`` and ``str`` typed; parse, then ``cls(**vars(args))``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default, help=docs[f.name])
        else:
            kind = _TYPES.get(f.type if isinstance(f.type, str) else f.type.__name__)
            if kind is None:
                raise TypeError(f"{cls.__name__}.{f.name}: expected a bool, int, float or str field, got {f.type}")
            parser.add_argument(flag, type=kind, default=f.default, help=docs[f.name])
    return parser


def experience_store() -> str:
    """The experience store the env's service uses (``$XLA_GYM_STORE``, default ``default``), a
    URL's password left out. With ``mask="known"`` the env's ``action_mask`` comes from what the
    store knows, so an agent that reads it collects other steps with another store: its run
    records this (``mask="episode"`` makes the run independent of it)."""
    value = os.environ.get("XLA_GYM_STORE", "default")
    url = urllib.parse.urlsplit(value)
    if url.password is None:
        return value
    host = f"{url.username}@{url.hostname}" + (f":{url.port}" if url.port else "")
    return url._replace(netloc=host).geturl()
