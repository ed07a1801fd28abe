"""Annotation schemes for the PSN engine, behind one protocol, chosen by name.

Role: the registry. ``get_scheme("set" | "derivation" | ...)`` returns a fresh strategy
object implementing :class:`~provenance.base.AnnotationScheme`; the engine is handed that
object and never branches on the scheme's name. The built-in schemes are ``set``,
``derivation`` (Nigam et al. 2012, Sec. 5), ``absorption`` (Liu et al. 2009, Sec. 4, with
lazy MinShip by default), ``dred`` (delete and re-derive, Liu et al.'s baseline, Sec.
3.2) and ``relative`` (relative provenance, their other baseline, Sec. 7.2); a user's own
scheme is registered with :func:`register_scheme`
or handed to the engine as an object. Three more reproduce the failures of earlier
algorithms that Nigam et al. 2012, Sec. 5-6 describe, and run only when a run is unsafe
(:mod:`provenance.failure_modes`): ``counting`` (derivation counts, which never converge on
a cycle of derivations), ``original`` (the original PSN, which changes a node's state when an
update arrives) and ``fifo-base`` (base-fact annotations, right only on FIFO channels).

Deliberately not here: the engine loop, joins, transports.
"""

from __future__ import annotations

from typing import Callable

from .base import NO_FIRE, AnnotationScheme

__all__ = ["AnnotationScheme", "NO_FIRE", "get_scheme", "register_scheme", "scheme_names"]

_REGISTRY: dict[str, Callable[[], AnnotationScheme]] = {}


def register_scheme(name: str, factory: Callable[[], AnnotationScheme]) -> None:
    """Make ``get_scheme(name)`` return ``factory()``."""
    _REGISTRY[name] = factory


def scheme_names() -> list[str]:
    """Names of the registered schemes."""
    return sorted(_REGISTRY)


def get_scheme(name: str | AnnotationScheme) -> AnnotationScheme:
    """Return a new instance of the scheme called ``name`` (or ``name`` itself if it is
    already a scheme object).

    Raises
    ------
    ndlog.errors.InputError
        For an unknown name, listing the known ones, or anything else than a name or a
        scheme.
    """
    if isinstance(name, AnnotationScheme):
        return name
    from ndlog.errors import InputError
    if not isinstance(name, str):
        raise InputError(f"an annotation is a scheme name ({', '.join(scheme_names())}) "
                         f"or a scheme object, got {type(name).__name__} {name!r:.80}")
    factory = _REGISTRY.get(name)
    if factory is None:
        raise InputError(f"unknown annotation scheme '{name}'; known: "
                         f"{', '.join(scheme_names())}")
    return factory()


def _register_builtin() -> None:
    from .absorption import SCHEME as absorption
    from .derivation import DerivationScheme
    from .dred import DRedScheme
    from .failure_modes import CountingScheme, FifoBaseScheme, OriginalScheme
    from .relative import RelativeScheme
    from .set_scheme import SetScheme
    register_scheme("set", SetScheme)
    register_scheme("derivation", DerivationScheme)
    register_scheme("absorption", absorption)
    register_scheme("dred", DRedScheme)
    register_scheme("relative", RelativeScheme)
    register_scheme("counting", CountingScheme)
    register_scheme("original", OriginalScheme)
    register_scheme("fifo-base", FifoBaseScheme)


_register_builtin()
