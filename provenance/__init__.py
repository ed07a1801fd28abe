"""Annotation schemes for the PSN engine, behind one protocol, chosen by name.

Role: the registry. ``get_scheme("set" | "derivation" | ...)`` returns a fresh strategy
object implementing :class:`~provenance.base.AnnotationScheme`; the engine is handed that
object and never branches on the scheme's name. New schemes (``absorption`` of issue 5)
register themselves with :func:`register_scheme`, or are found by module name
(``provenance.<name>``, exposing ``SCHEME``).

Deliberately not here: the engine loop, joins, transports.
"""

from __future__ import annotations

import importlib
from typing import Callable

from .base import NO_FIRE, AnnotationScheme

__all__ = ["AnnotationScheme", "NO_FIRE", "get_scheme", "register_scheme", "scheme_names"]

_REGISTRY: dict[str, Callable[[], AnnotationScheme]] = {}


def register_scheme(name: str, factory: Callable[[], AnnotationScheme]) -> None:
    """Make ``get_scheme(name)`` return ``factory()``."""
    _REGISTRY[name] = factory


def scheme_names() -> list[str]:
    """Names of the registered schemes."""
    _load_optional()
    return sorted(_REGISTRY)


def _load_optional() -> None:
    for name in ("absorption",):
        if name not in _REGISTRY:
            try:
                mod = importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{name}":
                    raise
                continue
            factory = getattr(mod, "SCHEME", None)
            if factory is not None:
                register_scheme(name, factory)


def get_scheme(name: str | AnnotationScheme) -> AnnotationScheme:
    """Return a new instance of the scheme called ``name`` (or ``name`` itself if it is
    already a scheme object).

    Raises
    ------
    ndlog.errors.InputError
        For an unknown name, listing the known ones.
    """
    if isinstance(name, AnnotationScheme):
        return name
    if name not in _REGISTRY:
        _load_optional()
    factory = _REGISTRY.get(name)
    if factory is None:
        from ndlog.errors import InputError
        raise InputError(f"unknown annotation scheme '{name}'; known: "
                         f"{', '.join(scheme_names())}")
    return factory()


def _register_builtin() -> None:
    from .derivation import DerivationScheme
    from .set_scheme import SetScheme
    register_scheme("set", SetScheme)
    register_scheme("derivation", DerivationScheme)


_register_builtin()
