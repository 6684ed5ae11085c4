"""The elements of an uploaded JSON array, read in bounded memory whatever the file holds.

ijson's `items` keeps a path prefix per open level ("item.item.item..."), so its
memory grows with the square of the nesting depth: a 400 KB file of 200,000
nested arrays took a worker past 17 GB. Here the parser's raw events (yajl's
basic_parse, fed chunk by chunk) are counted instead, and each element is built
only as far as ingestion needs it (CONTRACT.md §12):

- nesting deeper than MAX_NESTING_DEPTH anywhere ends the file `failed`;
- only a customer record's own fields are kept; other keys' values are read past, unbuilt;
- a record of more than MAX_RECORD_ITEMS keys and values is rejected (its reason
  comes instead of it);
- a field's text longer than its limit (normalize.FIELD_LIMITS) is kept cut to one
  character over it: the record is refused for it all the same, with the same reason,
  and holds a few KiB whatever the characters. One emoji makes CPython store every
  character of a str in 4 bytes: seven fields of 8 MiB held 224 MiB a record, and a
  reader two records (CONTRACT.md §12: the record bounds hold in bytes). Only the
  value being read is held whole, one at a time;
- the parser holds a string or number whole while reading it, so more than
  MAX_VALUE_BYTES read without any value completed (blanks between values aside)
  ends the file.

yajl turns a lone high-surrogate escape ("\\ud800") into "?" and a lone low one into
bytes Python will not decode; such escapes are rewritten to "\\u0000" before parsing,
so that the value holding one is refused like any other unstorable text.

Files as exporters write them (flat objects of text, whole numbers, booleans and
nulls) take a fast path (json_plain.py: the standard library's C decoder, about
half the cost). At the first element it is not sure of, it hands over to the
event parser, which reads the file again from its start, skips the elements
already given (the fast path gives exactly what it would have) and decides: the
same records, the same faults, the same reasons.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any, BinaryIO

import ijson

from partnerlink.customers.ingestion.json_plain import NotPlain, plain_elements
from partnerlink.customers.normalize import FIELD_LIMITS

MAX_NESTING_DEPTH = 32  # the file's own array is level 1, a record level 2
MAX_RECORD_ITEMS = 10_000
MAX_VALUE_BYTES = 8 * 1024 * 1024
READ_BUFFER_BYTES = 256 * 1024
RECORD_FIELDS = frozenset(FIELD_LIMITS)
_UTF8_BOM = b"\xef\xbb\xbf"
_WHITESPACE = b" \t\r\n"
_STARTS = frozenset({"start_map", "start_array"})
_ENDS = frozenset({"end_map", "end_array"})
_SURROGATE_ESCAPE = re.compile(
    rb"(\\+)u([dD][89abAB][0-9a-fA-F]{2})(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|(\\+)u[dD][c-fC-F][0-9a-fA-F]{2}"
)
_NUL_ESCAPE = b"\\u0000"
_ESCAPED_QUOTE = re.compile(rb'(\\+)"')
# A place where no escape sequence is cut: after a byte that is not a backslash and
# before one that can be neither a backslash nor part of "uXXXX".
_SAFE_CUT = re.compile(rb"[^\\](?=[^\\u0-9a-fA-F])")
_LONGEST_ESCAPE = 12  # a surrogate pair, "\ud83d\ude00"


class UploadFileInvalid(Exception):
    """The file cannot be ingested (not a JSON array of objects, breaks off, nests too
    deeply...); nothing of it is applied. The reason is safe to show."""


class NestedValue:
    """Stands for an array or object where a record field's text belongs (not built)."""

    def __repr__(self) -> str:
        return "NestedValue()"


NESTED = NestedValue()


def elements(
    stream: BinaryIO, keep_alive: Callable[[], None] | None = None
) -> Iterator[dict[str, Any] | str]:
    """Yields each element of the file's array in order: the record's own fields
    (values as parsed, NESTED for an array or object), or the reason an over-large
    record is rejected. Raises UploadFileInvalid at the first fault of the file.
    `keep_alive` is called at every read (one element may take minutes to read past)."""
    _expect_array(stream)
    start = stream.tell()
    given = 0
    try:
        for record in plain_elements(
            stream,
            keep_alive,
            read_size=READ_BUFFER_BYTES,
            fields=RECORD_FIELDS,
            max_items=MAX_RECORD_ITEMS,
        ):
            yield record
            given += 1
        return
    except NotPlain:
        pass
    stream.seek(start)
    parsed = _parsed_elements(stream, keep_alive)
    for _ in islice(parsed, given):  # already given by the fast path, identical
        pass
    yield from parsed


def _parsed_elements(
    stream: BinaryIO, keep_alive: Callable[[], None] | None
) -> Iterator[dict[str, Any] | str]:
    """elements() by the parser's events, from the start of the array."""
    found = ijson.sendable_list()
    parser = ijson.basic_parse_coro(found)
    depth = 0  # open arrays and objects
    index = 0  # the element being read
    record: dict[str, Any] = {}
    field: str | None = None  # the record field whose value comes next; None: not kept
    items = 0  # keys and values of the current record
    quiet = 0  # bytes read since the parser last completed a value
    held = b""
    in_string = 0  # 1 when the bytes sent so far end inside a string
    while True:
        chunk = stream.read(READ_BUFFER_BYTES)
        if keep_alive is not None:
            keep_alive()
        data, held = _split_safely(held + chunk) if chunk else (held, b"")
        try:
            if data:
                parser.send(_mark_lone_surrogates(data))
            if not chunk:
                parser.close()
        except ijson.JSONError as error:
            raise UploadFileInvalid(_describe_json_error(error, index)) from None
        except (ValueError, ArithmeticError, SystemError) as error:
            # Python's int or Decimal refused a number, or the text is not UTF-8 after all
            # (fed chunk by chunk, ijson reports either as a SystemError caused by it).
            raise UploadFileInvalid(_unreadable_value(error, index)) from None
        in_string ^= _unescaped_quotes(data) & 1
        if not found:
            if in_string or data.strip(_WHITESPACE):  # blanks between values are not held
                quiet += len(data)
            if quiet > MAX_VALUE_BYTES:
                raise UploadFileInvalid(
                    f"element {index} holds a value longer than "
                    f"{MAX_VALUE_BYTES // (1024 * 1024)} MiB; nothing was applied"
                )
            if chunk:
                continue
            return
        quiet = 0
        for event, value in found:
            if depth == 2:  # directly inside a record
                if event == "map_key":
                    items += 1
                    field = value if value in RECORD_FIELDS else None
                elif event == "end_map":
                    depth = 1
                    yield record if items <= MAX_RECORD_ITEMS else _too_large()
                    index += 1
                elif field is None:  # another key's value, read past
                    if event in _STARTS:
                        depth = 3
                    elif event == "end_array":  # the element was an array, now read to its end
                        raise UploadFileInvalid(
                            f"element {index} is not an object; nothing was applied"
                        )
                elif event in _STARTS:
                    depth = 3
                    record[field] = NESTED
                elif type(value) is str and len(value) > (limit := FIELD_LIMITS[field]):
                    record[field] = value[: limit + 1]  # refused all the same (see above)
                else:
                    record[field] = value
            elif depth > 2:  # inside a value of a record, which is read past
                items += 1
                if event in _STARTS:
                    depth += 1
                    if depth > MAX_NESTING_DEPTH:
                        raise UploadFileInvalid(
                            f"element {index} nests deeper than {MAX_NESTING_DEPTH} levels "
                            "(the file's array is level 1); nothing was applied"
                        )
                elif event in _ENDS:
                    depth -= 1
            elif depth == 1:  # between the array's elements
                if event in _STARTS:  # an array is read to its end: it may nest too deeply
                    depth, record, field, items = 2, {}, None, 0
                elif event == "end_array":
                    depth = 0
                else:
                    raise UploadFileInvalid(
                        f"element {index} is not an object; nothing was applied"
                    )
            elif event == "start_array":
                depth = 1
            else:
                raise UploadFileInvalid("the file is not a JSON array of customer records")
        del found[:]
        if not chunk:
            return


def _too_large() -> str:
    return f"the record holds more than {MAX_RECORD_ITEMS} keys and values"


def _unreadable_value(error: BaseException, index: int) -> str:
    cause = error if not isinstance(error, SystemError) else error.__cause__ or error.__context__
    what = "text that is not valid UTF-8"
    if not isinstance(cause, UnicodeDecodeError):
        what = "a number too large to read"
    return f"element {index} holds {what}; nothing was applied"


def _unescaped_quotes(data: bytes) -> int:
    """The quotes of `data` that open or close a string (a backslash run is never cut)."""
    count = data.count(b'"')
    if b'\\"' in data:
        count -= sum(len(match[1]) % 2 for match in _ESCAPED_QUOTE.finditer(data))
    return count


def _split_safely(data: bytes) -> tuple[bytes, bytes]:
    """(what can be parsed now, what waits for the next chunk): no escape sequence is cut
    in two, so that _mark_lone_surrogates sees each one whole."""
    tail = len(data) - _LONGEST_ESCAPE
    if data.find(b"\\", max(tail, 0)) == -1:
        return data, b""
    cut = None
    for match in _SAFE_CUT.finditer(data, max(tail - 64, 0)):
        cut = match.end()
    if cut is None:  # 64 bytes of hex digits and backslashes: not text any exporter writes
        return data, b""
    return data[:cut], data[cut:]


def _mark_lone_surrogates(data: bytes) -> bytes:
    if b"\\u" not in data:
        return data
    return _SURROGATE_ESCAPE.sub(_marked, data)


def _marked(match: re.Match[bytes]) -> bytes:
    slashes, high, low, low_slashes = match.groups()
    if low_slashes is not None:  # a low surrogate without a high one before it
        if len(low_slashes) % 2 == 0:  # "\\" then the text "udc00"
            return match[0]
        return low_slashes[:-1] + _NUL_ESCAPE
    if len(slashes) % 2 == 0:  # the text "ud800" after "\\"; a following escape is lone
        return slashes + b"u" + high + (_NUL_ESCAPE if low else b"")
    if low is None:
        return slashes[:-1] + _NUL_ESCAPE
    return match[0]


def _expect_array(stream: BinaryIO) -> None:
    """Fails early unless the first non-blank character opens an array (skips a UTF-8 BOM)."""
    offset = len(_UTF8_BOM) if stream.read(len(_UTF8_BOM)) == _UTF8_BOM else 0
    stream.seek(offset)
    while True:
        chunk = stream.read(65536)
        if not chunk:
            raise UploadFileInvalid("the file is empty; expected a JSON array of customer records")
        stripped = chunk.lstrip(_WHITESPACE)
        if stripped:
            break
    if not stripped.startswith(b"["):
        raise UploadFileInvalid("the file is not a JSON array of customer records")
    stream.seek(offset)


def _describe_json_error(error: Exception, index: int) -> str:
    """A reason without the parser's excerpt of the file (it could quote customer data)."""
    message = error.args[0] if error.args else ""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    first_line = str(message).splitlines()[0] if message else ""
    if "premature EOF" in first_line:
        what = "the file ends before the JSON array is complete (truncated upload?)"
    elif "trailing garbage" in first_line:
        what = "unexpected content after the JSON array"
    else:
        what = f"invalid JSON ({first_line.strip() or type(error).__name__})"
    return f"{what} (at element {index}); nothing was applied"
