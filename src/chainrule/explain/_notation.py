"""ASCII notation, for terminals whose encoding cannot show the Unicode tables.

- tangent: ẋ1 -> x1_dot, v̇3 -> v3_dot
- adjoint: x̄1 -> x1_bar, ȳ (as barred writes it) -> y_bar
- local partial: ∂v1/∂x1 -> dv1/dx1
- product: v̄3·∂v3/∂v1 -> v3_bar*dv3/dv1
- the constant π -> pi
- Greek letters in names are spelled out: α -> alpha, Δ -> Delta

Other characters outside ASCII lose their accents (é -> e) or, without an ASCII letter,
become ``u`` and their code point (☃ -> u2603).
"""

from __future__ import annotations

import re
import unicodedata

_MARKS = {"\u0307": "_dot", "\u0304": "_bar"}  # as _tables.dotted and _tables.barred write them
_MARKED = re.compile(r"([^\W\d_])([\u0307\u0304])(\d*)")
_SYMBOLS = {"∂": "d", "·": "*", "…": "...", "−": "-", "←": "<-", "→": "->"}


def _letters(ch: str) -> str:
    name = unicodedata.name(ch, "")
    if name.startswith("GREEK ") and " LETTER " in name:
        word = name.split(" LETTER ", 1)[1].split()[-1].lower()  # FINAL SIGMA -> sigma
        return word.capitalize() if " CAPITAL " in name else word
    return f"u{ord(ch):04x}"


def _char(ch: str) -> str:
    if ch in _SYMBOLS:
        return _SYMBOLS[ch]
    out = []
    for part in unicodedata.normalize("NFKD", ch):  # é -> e + accent; µ -> μ
        if part.isascii():
            out.append(part)
        elif not unicodedata.combining(part):
            out.append(_letters(part))
    return "".join(out)


def to_ascii(text: str) -> str:
    """``text`` in the ASCII notation above; ASCII text comes back unchanged."""
    if text.isascii():
        return text
    text = unicodedata.normalize("NFD", text)  # a precomposed ẋ or ȳ reads as x or y + mark
    text = _MARKED.sub(lambda m: m[1] + m[3] + _MARKS[m[2]], text)
    return "".join(ch if ch.isascii() else _char(ch) for ch in text)


def check_names(names: list[str]) -> None:
    """Refuse names that the ASCII notation would make equal (α and alpha)."""
    seen: dict[str, str] = {}
    for name in names:
        plain = to_ascii(name)
        if plain in seen and seen[plain] != name:
            raise ValueError(
                f"the names {seen[plain]!r} and {name!r} are both written {plain!r} in ASCII "
                "notation: rename one, or use the Unicode notation (ascii=False, no --ascii) "
                "on a UTF-8 terminal."
            )
        seen[plain] = name


def fits(text: str, stream) -> bool:
    """Whether ``stream`` can write ``text`` as it is (a stream without an encoding can)."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return True
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
