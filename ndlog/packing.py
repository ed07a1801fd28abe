"""NDlog values in msgpack: the one encoding of values between nodes, workers and processes.

Role: the ``default`` and ``ext_hook`` that let msgpack carry every NDlog value. NDlog
integers have arbitrary precision, msgpack's only 64 bits: an integer outside
``[-2**63, 2**64)`` travels as extension type :data:`BIG_INT` holding its two's-complement
bytes (big-endian; no limit on the digits, unlike Python's conversion of decimal text),
and comes back as the same ``int``. Sets travel as arrays.

Deliberately not here: the layout of messages (``engine.wire``) and of the Ray workers'
batches (``psn.distributed.shard``).
"""

from __future__ import annotations

import msgpack

__all__ = ["BIG_INT", "pack_default", "ext_hook", "packb", "unpackb"]

#: the msgpack extension type of an integer beyond 64 bits (two's complement, big-endian)
BIG_INT = 1


def pack_default(obj):
    """msgpack's ``default``: an integer beyond 64 bits as :data:`BIG_INT`, a set as an
    array; anything else is a TypeError naming the value."""
    if isinstance(obj, int):
        return msgpack.ExtType(BIG_INT, obj.to_bytes(obj.bit_length() // 8 + 1, "big",
                                                     signed=True))
    if isinstance(obj, (frozenset, set)):
        return list(obj)
    text = repr(obj)
    raise TypeError(f"cannot encode {text[:60] + '...' if len(text) > 60 else text} "
                    f"({type(obj).__name__}) on the wire")


def ext_hook(code: int, data: bytes):
    """msgpack's ``ext_hook``: :data:`BIG_INT` back to ``int``."""
    if code == BIG_INT:
        return int.from_bytes(data, "big", signed=True)
    return msgpack.ExtType(code, data)


def packb(obj) -> bytes:
    """``obj`` in msgpack with :func:`pack_default` (bytes stay bytes)."""
    return msgpack.packb(obj, use_bin_type=True, default=pack_default)


def unpackb(data: bytes):
    """Inverse of :func:`packb`; arrays come back as tuples (NDlog lists, node ids)."""
    return msgpack.unpackb(data, use_list=False, raw=False, strict_map_key=False,
                           ext_hook=ext_hook)
