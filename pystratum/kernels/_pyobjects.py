"""Python ``str`` labels numbered in compiled loops, reading CPython's objects where they lie
(optional: needs numba).

An object array of ``str`` and a list of label lists hold pointers to CPython objects.
Numbering them by value in Python (``pandas.factorize``, a dict) costs one hash call and one
``==`` call a row; here one compiled pass reads each object's type, length and characters
straight from memory and hashes them, so fresh ``str`` objects per row (text read from a
file, JSON, ``astype(object)``) cost about what integer labels do.

Equality is CPython's own for ``str``: same kind (1, 2 or 4 bytes a character), same length,
same bytes. CPython keeps every ``str`` in the narrowest kind its characters fit
(PEP 393) and compares kinds first, so this is ``==``. Only exact ``str`` objects in
CPython's compact form (every ``str`` made by Python code) are read; at the first other
object (a ``str`` subclass, bytes, None, a number, a legacy string from an old C API, a
set row) a kernel stops and says where, and the caller takes its Python path, which then
decides and refuses as always.

The objects are read, never written: no reference count changes, and the kernels hold the
GIL (no ``nogil``), so no other thread mutates a list while it is read. The caller keeps
the array or list alive for the call.

The layout (where the type, length, state and characters of a ``str``, the size and items
of a list or tuple lie) is derived from the running interpreter and proven on sample
objects at import (:data:`LAYOUT`, read with ``ctypes``, which cannot fault on them); on
any mismatch (another interpreter, a changed layout) :data:`LAYOUT` is None and the
callers take their Python paths.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from typing import NamedTuple

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._tools import prefetch_address

__all__ = ["LAYOUT", "Layout", "list_str_codes", "proven_layout", "str_codes"]


class Layout(NamedTuple):
    """Byte offsets into CPython objects, and the addresses of the exact types read."""

    type_offset: int        # ob_type in every object
    size_offset: int        # str length, list and tuple ob_size
    state_offset: int       # str state bits: kind (2-4), compact (5), ascii (6)
    ascii_data: int         # characters of a compact ASCII str
    compact_data: int       # characters of any other compact str
    list_items: int         # a list's pointer to its item array
    tuple_items: int        # a tuple's items, inline
    str_type: int
    list_type: int
    tuple_type: int


_POINTER = struct.calcsize("P")
_KIND_CODEC = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}
# One of each kind and form: ASCII, Latin-1, BMP, astral, empty, interned, long.
_SAMPLE_TEXTS = ("", "a", "label_0042", "caf\xe9", "\u0100\u4e2d", "x\U0001f600",
                 "w" * 300, sys.intern("pystratum_layout_check"))


def _derived_layout() -> Layout:
    header = object.__basicsize__
    return Layout(
        type_offset=header - _POINTER, size_offset=header,
        state_offset=header + 2 * _POINTER,  # after the length and the cached hash
        ascii_data=sys.getsizeof("") - 1, compact_data=sys.getsizeof("\xe9") - 2,
        list_items=header + _POINTER, tuple_items=tuple.__basicsize__,
        str_type=id(str), list_type=id(list), tuple_type=id(tuple))


def _word(raw: bytes, offset: int) -> int:
    return int.from_bytes(raw[offset:offset + _POINTER], sys.byteorder, signed=True)


def _str_matches(layout: Layout, text: str) -> bool:
    size = sys.getsizeof(text)
    fields = _fields(text, size, (layout.type_offset, layout.size_offset, layout.state_offset))
    if fields is None or fields[:2] != [layout.str_type, len(text)]:
        return False
    state = fields[2] & 0xFFFFFFFF
    kind, compact, ascii = (state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1
    expected_kind = 1 if max(map(ord, text), default=0) < 256 else \
        2 if max(map(ord, text)) < 65536 else 4
    if (kind, compact, ascii) != (expected_kind, 1, int(text.isascii())):
        return False
    data = layout.ascii_data if ascii else layout.compact_data
    raw = ctypes.string_at(id(text), size)
    return data + kind * len(text) <= size and \
        raw[data:data + kind * len(text)] == text.encode(_KIND_CODEC[kind])


def _fields(obj, size: int, offsets) -> list | None:
    """The words at ``offsets`` of the object's first ``size`` bytes; None for an offset
    past them (nothing outside the object is read)."""
    if any(offset < 0 or offset + _POINTER > size for offset in offsets):
        return None
    raw = ctypes.string_at(id(obj), size)
    return [_word(raw, offset) for offset in offsets]


def _list_matches(layout: Layout, items: list) -> bool:
    # The item array is followed only once the fields around its pointer read as a list's
    # (type, size, and the allocation after it, as __sizeof__ counts it): a wrong offset
    # never sends a read to an address that is no pointer.
    allocated = (items.__sizeof__() - list.__basicsize__) // _POINTER
    fields = _fields(items, list.__basicsize__, (layout.type_offset, layout.size_offset,
                                                 layout.list_items, layout.list_items + _POINTER))
    if fields is None or fields[:2] != [layout.list_type, len(items)] or \
            fields[3] != allocated or (fields[2] == 0) != (allocated == 0):
        return False
    listed = ctypes.string_at(fields[2], _POINTER * len(items)) if items else b""
    return [_word(listed, k * _POINTER) for k in range(len(items))] == list(map(id, items))


def _tuple_matches(layout: Layout, items: tuple) -> bool:
    offsets = [layout.type_offset, layout.size_offset] + \
        [layout.tuple_items + k * _POINTER for k in range(len(items))]
    fields = _fields(items, tuple.__basicsize__ + _POINTER * len(items), offsets)
    return fields == [layout.tuple_type, len(items)] + list(map(id, items))


def proven_layout(layout: Layout | None = None) -> Layout | None:
    """``layout`` (by default the running interpreter's, derived) if every sample object
    reads as it says, else None."""
    if sys.implementation.name != "cpython" or _POINTER != 8 or sys.byteorder != "little":
        return None
    try:
        layout = layout or _derived_layout()
        if layout.ascii_data % 8 or layout.compact_data % 8:  # _word_at reads aligned words
            return None
        # Built at run time, so none is a constant shared with other code.
        texts = [text[:0] + text for text in _SAMPLE_TEXTS] + list(_SAMPLE_TEXTS)
        if all(_str_matches(layout, text) for text in texts) and \
                _tuple_matches(layout, tuple(texts)) and _tuple_matches(layout, ()) and \
                _list_matches(layout, texts) and _list_matches(layout, []):
            return layout
    except (TypeError, ValueError, OverflowError, AttributeError, UnicodeError):
        pass
    return None


LAYOUT = proven_layout()
if LAYOUT is None:  # the kernel gate then serves no caller this module
    raise ImportError("this interpreter's object layout is not the one these kernels read")


def _loader(bits: int, result):
    @intrinsic
    def load(typingctx, address):
        def codegen(context, builder, signature, args):
            return builder.load(builder.inttoptr(args[0], ir.IntType(bits).as_pointer()))
        return result(types.intp), codegen
    return load


_load_u32 = _loader(32, types.uint32)
_load_word = _loader(64, types.intp)  # a pointer-sized word (8 bytes: LAYOUT needs it)


# Objects ahead whose header and first characters are prefetched: fresh objects lie apart
# in memory, and a str's characters often start on the header's next cache line.
_AHEAD = 16
_MIX = np.uint64(0xFF51AFD7ED558CCD)
_KIND_MIX = np.uint64(0xC4CEB9FE1A85EC53)
# The mask keeping a word's first k bytes (little-endian), k = 0..7.
_FIRST_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)], dtype=np.uint64)


@numba.njit(boundscheck=False, cache=True, inline="always")
def _text(pointer, layout):
    """``(kind, n_bytes, data address)`` of an exact compact ``str``, or kind 0."""
    if pointer == 0 or _load_word(pointer + layout.type_offset) != layout.str_type:
        return 0, 0, 0
    state = _load_u32(pointer + layout.state_offset)
    if (state >> 5) & 1 == 0:  # not compact: a legacy string, its characters elsewhere
        return 0, 0, 0
    kind = np.int64((state >> 2) & 7)
    data = layout.ascii_data if (state >> 6) & 1 else layout.compact_data
    return kind, kind * _load_word(pointer + layout.size_offset), pointer + data


# Text is read a word (8 bytes) at a time. The characters start 8-aligned (the offsets are
# multiples of 8, objects 16-aligned), so the last, partial word is an aligned load holding
# at least one of the string's bytes: it never crosses a page, and the bytes past the
# string's end are masked off.
@numba.njit(boundscheck=False, cache=True, inline="always")
def _word_at(data, n_bytes, w):
    """Word ``w`` of the text, its bytes past ``n_bytes`` zeroed."""
    value = np.uint64(_load_word(data + 8 * w))
    left = n_bytes - 8 * w
    return value if left >= 8 else value & _FIRST_BYTES[left]


@numba.njit(boundscheck=False, cache=True, inline="always")
def _hash(kind, n_bytes, data):
    h = np.uint64(kind) * _KIND_MIX ^ np.uint64(n_bytes)
    for w in range((n_bytes + 7) >> 3):
        h = (h ^ _word_at(data, n_bytes, w)) * _MIX
        h ^= h >> np.uint64(32)
    h ^= h >> np.uint64(29)
    h *= _MIX
    return h ^ (h >> np.uint64(32))


@numba.njit(boundscheck=False, cache=True, inline="always")
def _same_text(n_bytes, data, other):
    for w in range((n_bytes + 7) >> 3):
        if _word_at(data, n_bytes, w) != _word_at(other, n_bytes, w):
            return False
    return True


# The distinct texts seen, in order of first sight: ``slots``, an open-addressing table of
# codes (-1 empty) with each slot's hash; each code's first object (``firsts``, compared
# against) and its position. At most half the slots are used.
_FIRST_SLOTS = 64


# Objects seen last, by address: rows repeating a few objects (labels fancy-indexed from a
# few names) skip reading and hashing their text. An address stands for one object all
# call long: the caller's array or list keeps every object alive.
_MEMO_BITS = 10


@numba.njit(boundscheck=False, cache=True, inline="always")
def _memo_slot(pointer):
    return np.int64((np.uint64(pointer) * _MIX) >> np.uint64(64 - _MEMO_BITS))


@numba.njit(boundscheck=False, cache=True)
def _number_from(cells, start, codes, slots, slot_hashes, firsts, first_positions, n_codes,
                 memo, memo_codes, layout):
    """Codes for ``cells[start:]`` until the end, a cell that is not an exact compact
    ``str``, or a new text finding the table full: ``(next cell, n_codes)``. No array is
    reassigned in here (that would cost reference counting per cell)."""
    n = cells.shape[0]
    mask = slots.shape[0] - 1
    for i in range(start, n):
        if i + _AHEAD < n:
            prefetch_address(cells[i + _AHEAD])
            prefetch_address(cells[i + _AHEAD] + layout.ascii_data)
        pointer = cells[i]
        if pointer == 0:  # a NULL an object array may hold: not a str
            return i, n_codes
        remembered = _memo_slot(pointer)
        if memo[remembered] == pointer:
            codes[i] = memo_codes[remembered]
            continue
        kind, n_bytes, data = _text(pointer, layout)
        if kind == 0:
            return i, n_codes
        h = _hash(kind, n_bytes, data)
        s = np.int64(h & np.uint64(mask))
        code = -1
        while slots[s] >= 0:
            if slot_hashes[s] == h:
                other = firsts[slots[s]]
                other_kind, other_bytes, other_data = _text(other, layout)
                if other == pointer or (other_kind == kind and other_bytes == n_bytes and
                                        _same_text(n_bytes, data, other_data)):
                    code = slots[s]
                    break
            s = (s + 1) & mask
        if code < 0:
            if 2 * (n_codes + 1) > slots.shape[0]:
                return i, n_codes
            code = n_codes
            n_codes += 1
            slots[s] = code
            slot_hashes[s] = h
            firsts[code] = pointer
            first_positions[code] = i
        codes[i] = code
        memo[remembered] = pointer
        memo_codes[remembered] = code
    return n, n_codes


@numba.njit(boundscheck=False, cache=True)
def _grown(slots, slot_hashes):
    """The slot arrays at twice the size, holding the same codes."""
    mask = 2 * slots.shape[0] - 1
    new_slots = np.full(mask + 1, -1, dtype=np.int64)
    new_hashes = np.zeros(mask + 1, dtype=np.uint64)
    for s in range(slots.shape[0]):
        if slots[s] >= 0:
            t = np.int64(slot_hashes[s] & np.uint64(mask))
            while new_slots[t] >= 0:
                t = (t + 1) & mask
            new_slots[t] = slots[s]
            new_hashes[t] = slot_hashes[s]
    return new_slots, new_hashes


@numba.njit(boundscheck=False, cache=True)
def _number(cells, layout):
    """``(codes, first positions, cells read)``: the texts at ``cells`` numbered in order of
    first cell, up to the first cell that is not an exact compact ``str``."""
    codes = np.empty(cells.shape[0], dtype=np.int64)
    slots = np.full(_FIRST_SLOTS, -1, dtype=np.int64)
    slot_hashes = np.zeros(_FIRST_SLOTS, dtype=np.uint64)
    firsts = np.empty(_FIRST_SLOTS // 2, dtype=np.intp)
    first_positions = np.empty(_FIRST_SLOTS // 2, dtype=np.int64)
    memo = np.zeros(1 << _MEMO_BITS, dtype=np.intp)  # 0: no object
    memo_codes = np.empty(1 << _MEMO_BITS, dtype=np.int64)
    done, n_codes = 0, 0
    while True:
        done, n_codes = _number_from(cells, done, codes, slots, slot_hashes, firsts,
                                     first_positions, n_codes, memo, memo_codes, layout)
        if done == cells.shape[0] or _text(cells[done], layout)[0] == 0:
            return codes, first_positions[:n_codes], done
        slots, slot_hashes = _grown(slots, slot_hashes)
        room = slots.shape[0] // 2
        firsts = np.concatenate((firsts, np.empty(room - firsts.shape[0], dtype=np.intp)))
        first_positions = np.concatenate(
            (first_positions, np.empty(room - first_positions.shape[0], dtype=np.int64)))


def str_codes(pointers: np.ndarray, layout: Layout = LAYOUT):
    """``(codes, first_rows)`` of the objects at ``pointers`` (an object array's, as intp):
    each row's code (int64), its text numbered in order of first row, and each code's first
    row; None unless every object is an exact compact ``str``. The caller keeps the array
    alive for the call."""
    codes, first_rows, read = _number(pointers, layout)
    return (codes, first_rows.copy()) if read == pointers.shape[0] else None


@numba.njit(boundscheck=False, cache=True, inline="always")
def _is_sequence(pointer, layout):
    """Whether the object at ``pointer`` is an exact list or tuple."""
    if pointer == 0:
        return False
    kind = _load_word(pointer + layout.type_offset)
    return kind == layout.list_type or kind == layout.tuple_type


@numba.njit(boundscheck=False, cache=True, inline="always")
def _sequence_items(pointer, layout):
    """The address of an exact list's or tuple's item pointers (an empty list's may be 0)."""
    if _load_word(pointer + layout.type_offset) == layout.tuple_type:
        return pointer + layout.tuple_items
    return _load_word(pointer + layout.list_items)


@numba.njit(boundscheck=False, cache=True)
def _list_str_codes(outer, layout):
    """Row lengths, cell codes, first cells, and whether every row is a list or tuple of
    exact compact str: one call, so nothing runs between reading the cells' addresses and
    reading their text."""
    rows = _sequence_items(outer, layout)
    n_rows = _load_word(outer + layout.size_offset)
    lengths = np.empty(n_rows, dtype=np.int64)
    for r in range(n_rows):
        if r + _AHEAD < n_rows:
            prefetch_address(_load_word(rows + 8 * (r + _AHEAD)))
        row = _load_word(rows + 8 * r)
        if not _is_sequence(row, layout):
            return lengths, lengths, lengths, False
        lengths[r] = _load_word(row + layout.size_offset)
    cells = np.empty(lengths.sum(), dtype=np.intp)
    cell = 0
    for r in range(n_rows):
        if r + _AHEAD < n_rows:  # a list's items lie in an array of their own
            prefetch_address(_sequence_items(_load_word(rows + 8 * (r + _AHEAD)), layout))
        items = _sequence_items(_load_word(rows + 8 * r), layout)
        for k in range(lengths[r]):
            cells[cell] = _load_word(items + 8 * k)
            cell += 1
    codes, first_cells, read = _number(cells, layout)
    return lengths, codes, first_cells, read == cells.shape[0]


def list_str_codes(rows, layout: Layout = LAYOUT):
    """For ``rows``, an exact list or tuple whose rows are exact lists or tuples of exact
    compact ``str`` cells: ``(lengths, codes, first_cells)``, each row's cell count, each
    cell's code (int64; its text numbered in order of first cell, rows in order) and each
    code's first cell (its index among all cells); None for any other ``rows``. The
    caller's reference keeps ``rows`` alive for the call."""
    if type(rows) is not list and type(rows) is not tuple:
        return None
    lengths, codes, first_cells, every_row = _list_str_codes(id(rows), layout)
    return (lengths, codes, first_cells.copy()) if every_row else None

