"""Public names imported when first used (PEP 562): a public package's ``__init__`` lists its
names in ``__all__``, imports them under ``TYPE_CHECKING`` (what a type checker sees) and, under
``if not TYPE_CHECKING`` (so that a type checker flags a name it does not list), sets
``__getattr__ = exported(__name__, {module: names})``, so that importing the package stays fast
and loads no torch until a name that needs it is used (docs/architecture.md, "The public surface")."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any


def exported(package: str, modules: Mapping[str, Iterable[str]],
             renamed: Mapping[str, str] | None = None) -> Callable[[str], Any]:
    """``package``'s ``__getattr__``: each name of ``modules[module]`` is imported from that module
    (relative to the package) when first asked for, and kept in the package's namespace. A name
    of ``renamed`` (old name -> new) is the new one, with a :class:`DeprecationWarning`, for the
    one release that keeps it."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        if renamed and name in renamed:
            warnings.warn(f"{package}.{name} is now {package}.{renamed[name]}; the old name goes in the next release",
                          DeprecationWarning, stacklevel=2)
            return __getattr__(renamed[name])
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{where[name]}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
