"""String literals that never close are reported at once, with a message that says so.

xDSL 0.74 (`xdsl/utils/mlir_lexer.py`, `MLIRLexer._unescaped_characters_regex`) lexes a string with
`"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"`: a `+` nested in a `*`. When the closing quote
is missing, the regex engine tries every way of splitting the rest of the line between the two
quantifiers before it gives up, so one unterminated string costs time that doubles with each
character left on its line. Worth reporting upstream: the possessive form below matches exactly
the same strings (its two alternatives cannot start on the same character) and never backtracks.

xDSL then reports "End of file reached before closing string literal." for an unterminated string,
an invalid escape and a forbidden character alike; `clarify_string_error` says which it was, and where.
"""

from __future__ import annotations

import dataclasses
import re

from xdsl.utils.exceptions import ParseError
from xdsl.utils.mlir_lexer import MLIRLexer

# Possessive quantifiers (Python 3.11+, xDSL's own floor) keep the match linear in the line length.
_BODY = r'(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+'
LINEAR_STRING_REGEX = re.compile(f'"{_BODY}"')
_OPEN_STRING = re.compile(f'"{_BODY}')

_XDSL_MESSAGE = "End of file reached before closing string literal."


def install_linear_string_lexing() -> None:
    """Make every `MLIRLexer` in this process lex string literals in linear time."""
    MLIRLexer._unescaped_characters_regex = LINEAR_STRING_REGEX  # pyright: ignore[reportPrivateUsage]


def clarify_string_error(error: ParseError) -> ParseError:
    """xDSL's string-literal error, reworded to say what is wrong and where: "unterminated string"
    at the opening quote, or the invalid escape or character at its own column."""
    if error.msg != _XDSL_MESSAGE:
        return error
    span = error.span
    text = span.input.content
    if not isinstance(text, str) or not text.startswith('"', span.start):
        return error
    match = _OPEN_STRING.match(text, span.start)
    end = span.start if match is None else match.end()
    if end == len(text) or text[end] == "\n":
        return ParseError(dataclasses.replace(span, end=span.start + 1), "unterminated string")
    if text[end] == "\\":
        bad = text[end : end + 2]
        message = f'invalid escape {bad} in string: expected \\", \\n, \\t, \\\\ or two hex digits'
        return ParseError(dataclasses.replace(span, start=end, end=min(end + 2, len(text))), message)
    return ParseError(
        dataclasses.replace(span, start=end, end=end + 1), f"character {text[end]!r} not allowed in a string"
    )
