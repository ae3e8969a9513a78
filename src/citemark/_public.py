"""How a public module presents the names it re-exports from private ones."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, MutableMapping

__all__ = ["publish"]


def publish(namespace: MutableMapping[str, object], module: str, names: Iterable[str]) -> None:
    """Report each class and function of ``names`` as ``module.X`` in tracebacks and reprs.

    Only objects still named after a private module (``citemark._...``) are renamed,
    so a name the top level already published keeps ``citemark.X``.
    """
    for name in names:
        obj = namespace[name]
        if (isinstance(obj, type) or callable(obj)) and getattr(obj, "__module__", "").startswith(
            "citemark._"
        ):
            obj.__module__ = module
