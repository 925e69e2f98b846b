"""Uploaded corpora: a .txt (one sentence per line) or .tsv
(source<TAB>reference per line), checked before any work starts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import UploadFile

from app.schemas.validation import InputError, shown, valid_unicode


@dataclass
class Corpus:
    filename: str
    sources: list[str]
    references: list[str] | None  # None for .txt


MAX_FILENAME_CHARS = 200


def parse_upload(filename: str, content: bytes, max_bytes: int, max_lines: int) -> Corpus:
    name = valid_unicode(filename) or "upload"
    if len(name) > MAX_FILENAME_CHARS:
        raise InputError(f"the file name {shown(name)} is over {MAX_FILENAME_CHARS} characters: rename the file")
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if suffix not in ("txt", "tsv"):
        raise InputError(f"{name}: upload a .txt (one sentence per line) or a .tsv (source<TAB>reference)")
    if len(content) > max_bytes:
        raise InputError(f"{name} has {len(content):,} bytes; the limit is {max_bytes:,}")
    if b"\x00" in content:
        raise InputError(f"{name} is binary, not text")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{name} is not UTF-8 text (byte {error.start} cannot be decoded)") from None
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        raise InputError(f"{name} holds no sentence")
    if len(lines) > max_lines:
        raise InputError(f"{name} has {len(lines):,} sentences; the limit is {max_lines:,}")
    if suffix == "txt":
        return Corpus(name, lines, None)
    sources, references = [], []
    for number, line in enumerate(lines, start=1):
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise InputError(f"{name}, line {number}: expected source<TAB>reference")
        sources.append(parts[0].strip())
        references.append(parts[1].strip())
    return Corpus(name, sources, references)


async def read_upload(file: UploadFile, max_bytes: int, max_lines: int) -> Corpus:
    """Read at most one byte past the limit, so an oversized file is refused without reading it all."""
    return parse_upload(file.filename or "", await file.read(max_bytes + 1), max_bytes, max_lines)


async def upload_or_set(
    file: UploadFile | None,
    reference: str | None,
    reference_set: Callable[[str], tuple[list[str], list[str]]],
    max_bytes: int,
    max_lines: int,
) -> Corpus:
    """The corpus a job runs on: an uploaded file, or a reference set the server has (`reference_set` resolves its
    name: the demo set, a test set of the data directory, an earlier upload); exactly one of them, at most
    `max_lines` sentences either way."""
    if (file is None) == (reference is None):
        raise InputError("give either a file (.txt or .tsv) or a corpus the server has, not both")
    if file is not None:
        return await read_upload(file, max_bytes, max_lines)
    assert reference is not None
    sources, references = reference_set(reference)
    if len(sources) > max_lines:
        raise InputError(f"{reference} has {len(sources):,} sentences; a job's corpus is at most {max_lines:,}")
    return Corpus(reference, sources, references)
