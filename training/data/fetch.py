"""`memlens data fetch [corpus ...]`: download the corpora the project reads
from their public sources into the data folder, in the layout training and
evaluation read (training.data.translation, training.data.corpora, training.data.lm_corpora).

training/data/manifest.json lists every file: its URL (relative to the
manifest's base_url, GitHub's raw file server at fixed commits), its path in
the data folder, the sha256 and size of the downloaded bytes, and whether it
is gzipped here (the data folder keeps every text gzipped; files that the
source repository holds uncompressed are gzipped after download, without a
time stamp, so the result is the same on every machine).

Each file is downloaded to a hidden `.NAME.part` beside its target, checked
against its size and sha256, then renamed into place: a wrong checksum
removes the download and names the file; an interrupted download keeps its
part, and the next attempt (or the next run) asks the server for the rest
(HTTP Range), or starts over when the server cannot send a range. A file
already in place with the right contents is not downloaded again.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import http.client
import json
import os
import shutil
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tqdm import tqdm

from inference.core.places import DATA_DIR_ENV, resolve_data_dir

MANIFEST = Path(__file__).with_name("manifest.json")
BASE_URL_ENV = "MEMLENS_DATA_BASE_URL"
ATTEMPTS = 3  # per file and run: the first request and two resumptions
TIMEOUT_S = 60
CHUNK = 1 << 16


class FetchError(Exception):
    """A file that could not be fetched; the message names it and says what to do."""


@dataclass(frozen=True)
class ManifestFile:
    url: str  # relative to the manifest's base_url
    path: str  # in the data folder
    sha256: str  # of the downloaded bytes (before gzipping)
    size: int  # bytes downloaded
    gzip: bool  # gzipped after download


@dataclass(frozen=True)
class Manifest:
    base_url: str
    corpora: dict[str, list[ManifestFile]]


def load_manifest(path: str | Path = MANIFEST) -> Manifest:
    values = json.loads(Path(path).read_text())
    return Manifest(
        values["base_url"], {name: [ManifestFile(**f) for f in files] for name, files in values["corpora"].items()}
    )


def missing_files(data_dir: Path, corpus: str, manifest: Manifest | None = None) -> list[str]:
    """The corpus's paths that the data folder lacks (presence only, no checksum)."""
    manifest = manifest or load_manifest()
    return [f.path for f in manifest.corpora[corpus] if not (Path(data_dir) / f.path).is_file()]


def fetch_corpus(files: list[ManifestFile], data_dir: Path, base_url: str) -> int:
    """Fetch every file not already in place; returns how many were downloaded."""
    downloaded = 0
    for entry in files:
        target = Path(data_dir) / entry.path
        if target.is_file() and has_contents(target, entry):
            continue
        fetch_file(entry, target, f"{base_url.rstrip('/')}/{entry.url}")
        downloaded += 1
    return downloaded


def has_contents(path: Path, entry: ManifestFile) -> bool:
    """Whether `path` holds exactly the manifest's bytes (gunzipped when the entry is gzipped here)."""
    try:
        with gzip.open(path, "rb") if entry.gzip else path.open("rb") as stream:
            return sha256_and_size(stream) == (entry.sha256, entry.size)
    except (OSError, EOFError):  # not gzip, or cut short
        return False


class ByteStream(Protocol):
    def read(self, size: int, /) -> bytes: ...


def sha256_and_size(stream: ByteStream) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    while chunk := stream.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def fetch_file(entry: ManifestFile, target: Path, url: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.parent / f".{target.name}.part"
    for attempt in range(1, ATTEMPTS + 1):
        try:
            download(url, part, entry.size, entry.path)
            break
        except (OSError, http.client.HTTPException) as error:
            if isinstance(error, urllib.error.HTTPError) and error.code != 416:
                raise FetchError(f"{url}: HTTP {error.code} {error.reason}; {entry.path} was not fetched") from None
            if attempt == ATTEMPTS:
                kept = part.stat().st_size if part.exists() else 0
                reason = error.reason if isinstance(error, urllib.error.URLError) else error
                raise FetchError(
                    f"{url}: download failed ({reason}) with {kept:,} of {entry.size:,} bytes "
                    f"after {ATTEMPTS} attempts; run the command again to resume {entry.path}"
                ) from None
    check_download(part, entry, url)
    if entry.gzip:
        staged = target.parent / f".{target.name}.gz-part"
        try:
            with (
                part.open("rb") as raw,
                staged.open("wb") as out,
                gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as packed,
            ):
                shutil.copyfileobj(raw, packed)
            os.replace(staged, target)
        finally:
            staged.unlink(missing_ok=True)
        part.unlink()
    else:
        os.replace(part, target)


def download(url: str, part: Path, size: int, label: str) -> None:
    """Complete `part` from `url`: the missing bytes after what it holds (HTTP
    Range), or all of it when it holds none, too many, or the server sends the
    whole file; raises OSError when the transfer stops short."""
    have = part.stat().st_size if part.exists() else 0
    if have > size:
        part.unlink()
        have = 0
    if have == size:
        return
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as error:
        if error.code == 416:  # the part is not a prefix the server recognises: start over
            part.unlink(missing_ok=True)
        raise
    with response:
        resumed = response.status == 206 and response.headers.get("Content-Range", "").startswith(f"bytes {have}-")
        start = have if resumed else 0
        with (
            part.open("ab" if resumed else "wb") as out,
            tqdm(desc=label, total=size, initial=start, unit="B", unit_scale=True, leave=False) as bar,
        ):
            while chunk := response.read(CHUNK):
                out.write(chunk)
                bar.update(len(chunk))
    got = part.stat().st_size
    if got < size:
        raise OSError(f"the server sent {got - start:,} bytes and stopped")


def check_download(part: Path, entry: ManifestFile, url: str) -> None:
    with part.open("rb") as stream:
        digest, size = sha256_and_size(stream)
    if (digest, size) != (entry.sha256, entry.size):
        part.unlink()
        raise FetchError(
            f"{url}: checksum mismatch for {entry.path}: got sha256 {digest} ({size:,} bytes), "
            f"expected {entry.sha256} ({entry.size:,} bytes); the download was deleted and nothing was written"
        )


def list_corpora(manifest: Manifest, data_dir: Path) -> None:
    for name, files in manifest.corpora.items():
        missing = len(missing_files(data_dir, name, manifest))
        state = "present" if not missing else f"{missing} of {len(files)} files missing"
        print(f"{name:<18} {len(files):>3} files {sum(f.size for f in files) / 1e6:7.1f} MB  {state}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memlens data fetch",
        description="Download the corpora training and evaluation read, checking each file's sha256.",
    )
    parser.add_argument(
        "corpora",
        nargs="*",
        metavar="corpus",
        help="which to fetch: multi30k, opus_mt_testsets, enwiki, wikitext (default: all; see --list)",
    )
    parser.add_argument(
        "--data-dir", help=f"data folder to fill (default: ${DATA_DIR_ENV}, else ../shared/data beside the repository)"
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the corpora, their sizes and whether the data folder has them; download nothing",
    )
    parser.add_argument(
        "--base-url",
        help="server to download from instead of the manifest's "
        f"(default: ${BASE_URL_ENV}, else the manifest's base_url)",
    )
    parser.add_argument(
        "--manifest",
        default=str(MANIFEST),
        help="manifest of files and checksums (default: training/data/manifest.json)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    manifest = load_manifest(args.manifest)
    unknown = [name for name in args.corpora if name not in manifest.corpora]
    if unknown:
        parser.error(f"unknown corpus {', '.join(unknown)}; choose from {', '.join(manifest.corpora)}")
    data_dir = resolve_data_dir(args.data_dir)
    if args.list:
        list_corpora(manifest, data_dir)
        return 0
    base_url = args.base_url or os.environ.get(BASE_URL_ENV) or manifest.base_url
    for name in args.corpora or list(manifest.corpora):
        files = manifest.corpora[name]
        try:
            downloaded = fetch_corpus(files, data_dir, base_url)
        except FetchError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        print(
            f"{name}: {downloaded} of {len(files)} files downloaded, "
            f"{len(files) - downloaded} already in place under {data_dir}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
