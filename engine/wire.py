"""The wire format of updates: msgpack, no pickle.

Role: encode a batch of updates ``(sign, pred, tuple, annotation)`` to bytes and back, so that
every transport measures ``bytes_sent`` the same way (the encoded size) and annotations cross
node and worker boundaries in the scheme's serialized form (``scheme.serialize`` /
``scheme.deserialize``, built in the receiver's context).

Layout: a msgpack array of updates; each update is ``[sign, pred, tuple]`` or
``[sign, pred, tuple, annotation]`` when the scheme ships one. NDlog values are ints, floats
(``infinity`` included), strings and tuples (NDlog lists); arrays decode as tuples
(``use_list=False``), so a list value comes back as the same tuple. An integer beyond
msgpack's 64 bits is an extension type (:mod:`ndlog.packing`).

Deliberately not here: batching policy, compression, framing (the transports).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ndlog.errors import InputError
from ndlog.packing import packb, unpackb

__all__ = ["encode_updates", "decode_updates", "encoded_size", "packed_items_size", "Codec"]


def encode_updates(updates: Iterable[tuple], scheme=None, ctx=None) -> bytes:
    """Encode ``[(sign, pred, tuple, annotation)]`` as msgpack bytes.

    Parameters
    ----------
    scheme, ctx:
        The annotation scheme and the *sender's* context, for ``scheme.serialize``; without a
        scheme annotations are left out.
    """
    return _encode(updates, scheme, ctx, False)[0]


def _encode(updates, scheme, ctx, measure: bool) -> tuple[bytes, int]:
    if scheme is None or not scheme.ships_annotations:
        return _packb([u[:3] for u in updates]), 0
    rows = []
    ser = scheme.serialize
    for sign, pred, tup, ann in updates:
        data = ser(ctx, ann)
        rows.append((sign, pred, tup) if data is None else (sign, pred, tup, data))
    packed = _packb(rows)
    if not measure:
        return packed, 0
    # a row is a msgpack array of 3 or 4 items, whose header is one byte either way, so
    # the annotations' own packed bytes are exactly the difference (one more packb per
    # message instead of one per annotation)
    return packed, len(packed) - len(_packb([r[:3] for r in rows]))


def _measure(updates, scheme, ctx) -> tuple[int, int]:
    """``(len(encode_updates(...)), annotation bytes)`` without building the message: a row
    is a msgpack array of 3 or 4 items (a one-byte header either way), so the message
    packs to its rows without annotations plus each annotation's own encoding, which the
    scheme's ``wire_size`` counts (absorption's single derivations without serializing)."""
    base = len(_packb([u[:3] for u in updates]))
    if scheme is None or not scheme.ships_annotations:
        return base, 0
    ann = scheme.wire_size(ctx, [u[3] for u in updates], packed_items_size)
    return base + ann, ann


def _packb(obj) -> bytes:
    try:
        return packb(obj)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"value cannot be sent on the wire: {exc}") from None


def decode_updates(data: bytes, scheme=None, ctx=None) -> list[tuple]:
    """Inverse of :func:`encode_updates`, building annotations in the *receiver's* ``ctx``
    (a missing annotation decodes as ``scheme.deserialize(ctx, None)``)."""
    rows = unpackb(data)
    out = []
    de = scheme.deserialize if scheme is not None else None
    for row in rows:
        sign, pred, tup = row[0], row[1], row[2]
        raw = row[3] if len(row) > 3 else None
        ann = de(ctx, raw) if de is not None else raw
        out.append((sign, pred, tup, ann))
    return out


def encoded_size(updates: Iterable[tuple], scheme=None, ctx=None) -> int:
    """``len(encode_updates(...))``: what ``bytes_sent`` counts."""
    return len(encode_updates(updates, scheme, ctx))


class Codec:
    """An annotation scheme bound to the wire format (what transports are handed)."""

    def __init__(self, scheme):
        self.scheme = scheme

    def encode(self, updates: Iterable[tuple], ctx: Any = None) -> bytes:
        return encode_updates(updates, self.scheme, ctx)

    def encode_measured(self, updates: Iterable[tuple], ctx: Any = None) -> tuple[bytes, int]:
        """The encoded bytes and the bytes of the serialized annotations inside them
        (per-tuple provenance size, summed), serializing each annotation once."""
        return _encode(updates, self.scheme, ctx, True)

    def measure(self, updates: list, ctx: Any = None) -> tuple[int, int]:
        """``(len(encode(updates, ctx)), annotation bytes)``, as :meth:`encode_measured`
        counts them, without building the bytes: what a transport counts for a message
        its receiver takes as objects (the simulator's, inside one Ray worker)."""
        return _measure(updates, self.scheme, ctx)

    def decode(self, data: bytes, ctx: Any = None) -> list[tuple]:
        return decode_updates(data, self.scheme, ctx)

    def must_rebuild(self, context_of: Callable[[Any], Any], src: Any, dst: Any) -> bool:
        """True if updates from node ``src`` must be decoded from their bytes in node
        ``dst``'s context (annotations bound to another context, e.g. another CUDD
        manager; ``context_of`` is asked only for such schemes). Transports call it for
        messages between workers."""
        scheme = self.scheme
        return scheme.context_bound and scheme.must_rebuild(context_of(src), context_of(dst))

    def annotation_size(self, ann, ctx: Any = None) -> int:
        """Bytes of one annotation in msgpack (per-tuple provenance size)."""
        if not self.scheme.ships_annotations:
            return 0
        data = self.scheme.serialize(ctx, ann)
        return 0 if data is None else len(_packb(data))

    def annotations_size(self, anns: Iterable, ctx: Any = None) -> int:
        """``sum(annotation_size(a, ctx) for a in anns)``, in bulk.

        Parameters
        ----------
        anns:
            Annotations as updates carry them (a stored value's ``occurrences``).
        ctx:
            The annotation context they belong to.

        Returns
        -------
        int
            Their msgpack bytes, as the scheme's ``wire_size`` counts them (0 for a scheme
            that ships no annotations).
        """
        scheme = self.scheme
        if not scheme.ships_annotations:
            return 0
        return scheme.wire_size(ctx, list(anns), packed_items_size)


def packed_items_size(items: list) -> int:
    """``sum(len(msgpack.packb(x)) for x in items)``, in one call.

    Parameters
    ----------
    items:
        Values the wire format can encode.

    Returns
    -------
    int
        The items packed as one msgpack array, less the array's header (1 byte up to 15
        items, 3 up to 65,535, else 5).

    Raises
    ------
    ndlog.errors.InputError
        If an item cannot be encoded.
    """
    n = len(items)
    if not n:
        return 0
    return len(_packb(items)) - (1 if n < 16 else 3 if n < 0x10000 else 5)
