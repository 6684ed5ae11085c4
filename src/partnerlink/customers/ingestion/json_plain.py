"""The fast path of json_stream.elements: files as exporters write them (flat objects of
text, whole numbers, booleans and nulls), decoded by the standard library's C decoder.

Each read's run of elements is decoded in one call, else one element at a time.
At the first element it is not sure of (not an object, a nested or fractional
value, a lone surrogate escape, anything the decoder refuses, a large element,
content after the array) it raises NotPlain, and json_stream's event parser
decides, from the file's start: it alone defines the records, faults and reasons.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any, BinaryIO


class NotPlain(Exception):
    """The fast path met something it leaves to the event parser."""


def _refuse_constant(name: str) -> Any:
    raise NotPlain(name)  # NaN, Infinity: not JSON


_DECODE = json.JSONDecoder(parse_constant=_refuse_constant).raw_decode
_BLANKS = re.compile(r"[ \t\r\n]*")
# A lone surrogate escape leaves a surrogate in the decoded text (a pair becomes one
# character): the event parser's rewriting of it decides.
_SURROGATE = re.compile("[\ud800-\udfff]")
# An element this long may hold more keys than json_stream.MAX_RECORD_ITEMS, or a long
# value: the event parser's limits decide it.
MAX_PLAIN_ELEMENT_CHARS = 32 * 1024
_PLAIN_VALUES = (str, int, bool, type(None))
_PLAIN_TYPES = frozenset(_PLAIN_VALUES)
_DICT_ONLY = frozenset({dict})
_LOADS = json.JSONDecoder(parse_constant=_refuse_constant).decode


def plain_elements(
    stream: BinaryIO,
    keep_alive: Callable[[], None] | None,
    *,
    read_size: int,
    fields: frozenset[str],
    max_items: int,
) -> Iterator[dict[str, Any]]:
    """The fast path: the elements of a file of plain records, decoded whole; raises
    NotPlain where the event parser must decide. The stream is past the BOM."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    text = ""
    position = 0
    ended = False
    whole_run = True  # a run of elements may be tried (once a read)
    expect_element = True  # after "[" or ","; else after an element: "," or "]"
    first = True
    plain = _PLAIN_VALUES

    def read_more() -> None:
        nonlocal text, position, ended, whole_run
        whole_run = True
        chunk = stream.read(read_size)
        if keep_alive is not None:
            keep_alive()
        try:
            more = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            raise NotPlain("not UTF-8") from None
        text = text[position:] + more
        position = 0
        ended = not chunk

    read_more()
    position = _blanks_end(text, 0)
    if text[position : position + 1] != "[":
        raise NotPlain("no array")
    position += 1
    while True:
        position = _blanks_end(text, position)
        if position >= len(text):
            if ended:
                raise NotPlain("truncated")
            read_more()
            continue
        char = text[position]
        if not expect_element:
            if char == ",":
                expect_element, position = True, position + 1
                continue
            if char == "]":
                break
            raise NotPlain("separator")
        if char == "]" and first:
            break
        if char != "{":
            raise NotPlain("not an object")
        if whole_run:
            # Every element up to the last "}" read, in one call: if they decode as an
            # array, the cut is an element's end (a cut inside a string or a nested value
            # leaves the text unbalanced), and they are the file's next elements.
            whole_run = False
            cut = text.rfind("}", position) + 1
            try:
                run = _LOADS("[" + text[position:cut] + "]")
            except (ValueError, RecursionError):
                run = None  # one element at a time, until the next read
            if run:
                yield from _plain_run(run, text, position, cut, fields, max_items)
                position, expect_element, first = cut, False, False
                continue
        try:
            record, end = _DECODE(text, position)
        except (ValueError, RecursionError):
            if ended or len(text) - position > MAX_PLAIN_ELEMENT_CHARS:
                raise NotPlain("not decodable") from None
            read_more()  # the element may go on in the next chunk
            continue
        if end - position > MAX_PLAIN_ELEMENT_CHARS:
            raise NotPlain("large element")
        escaped = "\\u" in text[position:end]
        kept = {}
        for key, value in record.items():
            if type(value) not in plain:
                raise NotPlain("nested or fractional value")
            if key in fields:
                if escaped and type(value) is str and _SURROGATE.search(value):
                    raise NotPlain("lone surrogate")
                kept[key] = value
        position, expect_element, first = end, False, False
        yield kept
    # After the array's "]": blanks only, to the end of the file.
    position += 1
    while True:
        position = _blanks_end(text, position)
        if position < len(text):
            raise NotPlain("content after the array")
        if ended:
            return
        read_more()


def _blanks_end(text: str, position: int) -> int:
    match = _BLANKS.match(text, position)
    return position if match is None else match.end()


def _plain_run(
    run: list[Any], text: str, start: int, end: int, fields: frozenset[str], max_items: int
) -> list[dict[str, Any]]:
    """The decoded elements text[start:end] as records (their `fields`), or NotPlain.

    Each test is one pass over the whole run in C (map, issuperset, max), not a Python
    loop a record: the check pass runs this over every element of a file before its
    first batch (measured at 1,000,000 records, faster than with the loop:
    bench/README.md).
    """
    if not _DICT_ONLY.issuperset(map(type, run)):
        raise NotPlain("not an object")
    if not _PLAIN_TYPES.issuperset(map(type, chain.from_iterable(map(dict.values, run)))):
        raise NotPlain("nested or fractional value")
    # Every key is followed by a colon: the colons beyond the distinct keys bound how many
    # repeated keys any element holds (the event parser counts them).
    sizes = list(map(len, run))
    if max(sizes) + text.count(":", start, end) - sum(sizes) > max_items:
        raise NotPlain("many keys")
    if "\\u" in text[start:end] and any(
        type(value) is str and _SURROGATE.search(value)
        for value in chain.from_iterable(map(dict.values, run))
    ):
        raise NotPlain("lone surrogate")
    issuperset = fields.issuperset
    return [
        record
        if issuperset(record)
        else {key: value for key, value in record.items() if key in fields}
        for record in run
    ]
