"""What counts as sensitive text: one classifier for on-screen text (OCR lines) and speech (transcripts).

"Sensitive" means text that identifies or gives access to a person or an account:
- ``email``: e-mail addresses, also as ASR writes them when spoken ("jane dot doe at example dot com");
- ``phone``: phone numbers (8+ digits with the usual separators, optional +country code; dates excluded);
- ``url_token``: URLs whose query carries a secret (token, key, sig, auth, session, password, code,
  access_token, api_key);
- ``card``: payment card numbers (13-19 digits, spaces/dashes allowed, Luhn checksum valid);
- ``address``: street addresses (house number, 1-3 capitalised words, a street suffix);
- ``id_number``: US social security numbers (ddd-dd-dddd) and IBANs;
- ``name``: the names the user lists (``names``), each matched as listed, case-insensitively, as whole
  words with any whitespace between its parts. "Maria Keller" does not hide a lone "Maria": list
  "Maria" too for that (a first name alone is often an ordinary word: Will, Mark, Rose).
Plain words, prices, dates and times are left alone so frames and transcripts stay useful for captioning.

Known gaps: numbers spoken as words ("four one five ...") and house numbers written as words are not
recognised; neither are names the user did not list.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from egohorizon.errors import ConfigError

SENSITIVE_PATTERNS: dict[str, re.Pattern] = {
    # A space next to "." or "@" is allowed: OCR often splits "omar.doe5@example.com" at the dot.
    "email": re.compile(r"[A-Za-z0-9_%+-]+(?:\s?\.\s?[A-Za-z0-9_%+-]+)*\s?@\s?[A-Za-z0-9-]+"
                        r"(?:\s?\.\s?[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    "phone": re.compile(r"(?<![\w])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?)?\d{2,4}(?:[\s.-]?\d{2,4}){2,3}(?![\w])"),
    "url_token": re.compile(r"(?:https?://|www\.)\S*[?&#](?:token|key|sig|auth|session|password|code|"
                            r"access_token|api_key)=\S+", re.IGNORECASE),
    "card": re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)"),
    "address": re.compile(r"\b\d{1,5}\s+(?:[A-Z][a-z]+\.?\s+){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|"
                          r"Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|Terrace|Close|Square)\b\.?"),
    "id_number": re.compile(r"\b\d{3}-\d{2}-\d{4}\b|\b[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){3,7}(?:\s?[A-Z0-9]{1,3})?\b"),
}
# An e-mail address as speech recognisers write it out; the top-level domains keep "look at this dot
# com" style phrases rare while covering what people say aloud.
SPOKEN_EMAIL = re.compile(
    r"\b[a-z0-9._-]+(?:\s+dot\s+[a-z0-9_-]+)*\s+at\s+[a-z0-9-]+(?:\s+dot\s+[a-z0-9-]+)*\s+dot\s+"
    r"(?:com|org|net|edu|gov|io|co|uk|de|ch|fr|it|es|nl|info|me)\b", re.IGNORECASE)
MIN_PHONE_DIGITS = 8
# Dates and times have phone-like digit runs; they are not sensitive and are left visible.
DATE_LIKE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")
KINDS = ("email", "url_token", "card", "id_number", "address", "name", "phone")  # priority when spans overlap
REDACTION = re.compile(r"\[(?:" + "|".join(KINDS) + r")\]")


def luhn_valid(digits: str) -> bool:
    """The payment-card checksum (ISO/IEC 7812); filters out most long numbers that are not cards."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def names_pattern(names: Iterable[str]) -> re.Pattern | None:
    """One regex for the listed names (longest first, so "Ann Lee" wins over "Ann"); None for none."""
    parts = sorted({" ".join(n.split()) for n in names if n and n.strip()}, key=len, reverse=True)
    if not parts:
        return None
    alternatives = [r"\s+".join(re.escape(word) for word in name.split()) for name in parts]
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


@dataclass
class SensitiveText:
    """The classifier: ``spans(text)`` finds sensitive spans, ``merged_spans`` one span per item."""

    names: Sequence[str] = ()
    _names: re.Pattern | None = field(init=False, repr=False, default=None)

    def __post_init__(self):
        self.names = tuple(self.names)
        self._names = names_pattern(self.names)

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, kind) character spans; a piece of text may match more than one kind."""
        found = []
        for kind, pattern in SENSITIVE_PATTERNS.items():
            for match in pattern.finditer(text):
                digits = re.sub(r"\D", "", match.group())
                if kind == "card" and not (13 <= len(digits) <= 19 and luhn_valid(digits)):
                    continue
                if kind == "phone" and (len(digits) < MIN_PHONE_DIGITS or DATE_LIKE.fullmatch(match.group().strip())):
                    continue
                found.append((match.start(), match.end(), kind))
        found += [(m.start(), m.end(), "email") for m in SPOKEN_EMAIL.finditer(text)]
        if self._names is not None:
            found += [(m.start(), m.end(), "name") for m in self._names.finditer(text)]
        return found

    def merged_spans(self, text: str) -> list[tuple[int, int, str]]:
        """Overlapping spans joined into one item, named by the first kind of ``KINDS`` among them."""
        merged: list[list] = []
        for start, end, kind in sorted(self.spans(text)):
            if merged and start < merged[-1][1]:
                last = merged[-1]
                last[1] = max(last[1], end)
                last[2] = min(last[2], kind, key=KINDS.index)
            else:
                merged.append([start, end, kind])
        return [tuple(span) for span in merged]

    def scrub(self, text: str) -> tuple[str, int]:
        """The text with each sensitive item replaced by ``[kind]``, and the number of items."""
        spans = self.merged_spans(text)
        for start, end, kind in reversed(spans):
            text = f"{text[:start]}[{kind}]{text[end:]}"
        return text, len(spans)


def sensitive_spans(text: str, names: Sequence[str] = ()) -> list[tuple[int, int, str]]:
    """(start, end, kind) character spans of sensitive text in one line (see ``SensitiveText``)."""
    return SensitiveText(names).spans(text)


def count_redactions(texts: Iterable[str]) -> int:
    """How many ``[kind]`` placeholders the scrubber left in these texts."""
    return sum(len(REDACTION.findall(text)) for text in texts)


def read_names(path: str | os.PathLike) -> list[str]:
    """The names listed in a UTF-8 text file, one per line; blank lines and ``#`` comments skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the names file ({error.strerror or error})") from None
    except UnicodeDecodeError as error:
        line = Path(path).read_bytes().count(b"\n", 0, error.start) + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte {error.start})") from None
    names = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    return [name for name in names if name]
