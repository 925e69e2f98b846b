"""`memlens data fetch` against a loopback HTTP server serving generated
corpus files: layout, checksums, interrupted downloads, reruns."""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from inference.core.places import resolve_data_dir
from tests.training.conftest import write_synthetic_multi30k, write_synthetic_wikitext
from training.data.corpora import read_de_en_news, read_ru_en
from training.data.fetch import (
    ATTEMPTS,
    BASE_URL_ENV,
    has_contents,
    load_manifest,
    main,
)
from training.data.lm_corpora import WIKITEXT_FILES, read_enwiki, read_wikitext
from training.data.translation import SPLITS, read_multi30k

COMMIT = "0" * 40


class CorpusServer(ThreadingHTTPServer):
    """Serves `files` (URL path -> bytes), honouring `Range: bytes=N-` when
    `ranges` is set; a path in `cuts` has its next cuts[path] responses cut off
    halfway. `requests` records (path, Range header) of every request."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), RangeHandler)
        self.files: dict[str, bytes] = {}
        self.cuts: dict[str, int] = {}
        self.ranges = True
        self.requests: list[tuple[str, str | None]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class RangeHandler(BaseHTTPRequestHandler):
    server: CorpusServer

    def do_GET(self):
        server = self.server
        server.requests.append((self.path, self.headers.get("Range")))
        body = server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        if self.headers.get("Range") and server.ranges:
            start = int(self.headers["Range"].removeprefix("bytes=").rstrip("-"))
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        payload = body[start:]
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if server.cuts.get(self.path, 0) > 0:
            server.cuts[self.path] -= 1
            payload = payload[: len(payload) // 2]
            self.close_connection = True
        self.wfile.write(payload)

    def log_message(self, format, *args):
        pass


@pytest.fixture
def server():
    server = CorpusServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def originals(tmp_path_factory) -> Path:
    """Multi30k (gzipped, as its repository holds it) and WikiText (served uncompressed, gzipped on fetch)."""
    return write_synthetic_wikitext(write_synthetic_multi30k(tmp_path_factory.mktemp("originals")))


@pytest.fixture
def manifest(tmp_path, server, originals) -> Path:
    """A manifest of the originals, served by `server` at owner/repo/COMMIT/<path>."""
    corpora: dict[str, list[dict]] = {}
    for path in sorted(originals.rglob("*.gz")):
        relative = path.relative_to(originals).as_posix()
        corpus = relative.split("/")[0]
        served_gzipped = corpus == "multi30k"
        body = path.read_bytes() if served_gzipped else gzip.decompress(path.read_bytes())
        url = f"owner/{corpus}/{COMMIT}/{relative if served_gzipped else relative.removesuffix('.gz')}"
        server.files[f"/{url}"] = body
        corpora.setdefault(corpus, []).append(
            {
                "url": url,
                "path": relative,
                "sha256": hashlib.sha256(body).hexdigest(),
                "size": len(body),
                "gzip": not served_gzipped,
            }
        )
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"base_url": server.url, "corpora": corpora}))
    return path


def fetch(manifest: Path, data_dir: Path, *extra: str) -> int:
    return main([*extra, "--manifest", str(manifest), "--data-dir", str(data_dir)])


def leftovers(data_dir: Path) -> list[str]:
    return sorted(p.name for p in data_dir.rglob(".*"))


def test_fetch_lays_out_files_the_readers_read(tmp_path, manifest, originals, server, capsys):
    data_dir = tmp_path / "data"
    assert fetch(manifest, data_dir) == 0
    for split in SPLITS:
        assert read_multi30k(data_dir, split) == read_multi30k(originals, split)
    for split in WIKITEXT_FILES:  # fetched uncompressed, gzipped here
        assert read_wikitext(data_dir, split) == read_wikitext(originals, split)
    assert leftovers(data_dir) == []
    out = capsys.readouterr().out
    assert "multi30k: 6 of 6 files downloaded" in out and "wikitext: 4 of 4 files downloaded" in out
    assert len(server.requests) == 10


def test_gzipping_is_reproducible(tmp_path, manifest):
    assert fetch(manifest, tmp_path / "a", "wikitext") == 0
    assert fetch(manifest, tmp_path / "b", "wikitext") == 0
    for relative in WIKITEXT_FILES.values():
        packed = (tmp_path / "a/wikitext" / relative).read_bytes()
        assert packed == (tmp_path / "b/wikitext" / relative).read_bytes()
        # Two runs within one second agree even with a clock in the header: the header itself must hold neither
        # a modification time (bytes 4-7) nor a file name (flag 0x08 of byte 3).
        assert packed[4:8] == bytes(4) and not packed[3] & 0x08, packed[:10]


def test_second_run_downloads_nothing(tmp_path, manifest, server, capsys):
    data_dir = tmp_path / "data"
    assert fetch(manifest, data_dir) == 0
    server.requests.clear()
    assert fetch(manifest, data_dir) == 0
    assert server.requests == []
    assert "multi30k: 0 of 6 files downloaded, 6 already in place" in capsys.readouterr().out


def test_a_changed_file_is_fetched_again(tmp_path, manifest, server):
    data_dir = tmp_path / "data"
    assert fetch(manifest, data_dir, "wikitext") == 0
    damaged = data_dir / "wikitext/wikitext-2/valid.txt.gz"
    damaged.write_bytes(gzip.compress(b"something else\n"))
    server.requests.clear()
    assert fetch(manifest, data_dir, "wikitext") == 0
    assert [path for path, _ in server.requests] == [f"/owner/wikitext/{COMMIT}/wikitext/wikitext-2/valid.txt"]
    entry = next(f for f in load_manifest(manifest).corpora["wikitext"] if f.path.endswith("wikitext-2/valid.txt.gz"))
    assert has_contents(damaged, entry)


def test_wrong_checksum_is_a_clear_error_and_leaves_nothing(tmp_path, manifest, server, capsys):
    path = f"/owner/multi30k/{COMMIT}/multi30k/train.de.gz"
    server.files[path] = server.files[path][:-1] + b"x"  # same size, other bytes
    data_dir = tmp_path / "data"
    assert fetch(manifest, data_dir, "multi30k") == 1
    error = capsys.readouterr().err
    assert "checksum mismatch for multi30k/train.de.gz" in error and "nothing was written" in error
    assert not (data_dir / "multi30k/train.de.gz").exists()
    assert leftovers(data_dir) == []


def test_missing_file_on_the_server_is_a_clear_error(tmp_path, manifest, server, capsys):
    del server.files[f"/owner/multi30k/{COMMIT}/multi30k/val.en.gz"]
    assert fetch(manifest, tmp_path / "data", "multi30k") == 1
    assert "HTTP 404" in capsys.readouterr().err and not (tmp_path / "data/multi30k/val.en.gz").exists()


def test_interrupted_download_resumes_on_the_next_run(tmp_path, manifest, server, originals, capsys):
    path = f"/owner/wikitext/{COMMIT}/wikitext/wikitext-103/wiki.test.tokens"
    size = len(server.files[path])
    server.cuts[path] = ATTEMPTS  # every attempt of this run stops short
    data_dir = tmp_path / "data"
    assert fetch(manifest, data_dir, "wikitext") == 1
    assert "run the command again to resume wikitext/wikitext-103/wiki.test.tokens.gz" in capsys.readouterr().err
    assert not (data_dir / "wikitext/wikitext-103/wiki.test.tokens.gz").exists()
    part = data_dir / "wikitext/wikitext-103/.wiki.test.tokens.gz.part"
    kept = part.stat().st_size
    assert 0 < kept < size
    server.requests.clear()
    assert fetch(manifest, data_dir, "wikitext") == 0
    assert [header for requested, header in server.requests if requested == path] == [f"bytes={kept}-"]  # only the rest
    assert read_wikitext(data_dir, "wikitext103_test") == read_wikitext(originals, "wikitext103_test")
    assert leftovers(data_dir) == []


def test_a_cut_transfer_is_resumed_within_the_run(tmp_path, manifest, server, originals):
    path = f"/owner/multi30k/{COMMIT}/multi30k/train.en.gz"
    server.cuts[path] = 1
    assert fetch(manifest, tmp_path / "data", "multi30k") == 0
    ranges = [header for requested, header in server.requests if requested == path]
    assert ranges[0] is None and ranges[1] == f"bytes={len(server.files[path]) // 2}-"
    assert read_multi30k(tmp_path / "data", "train") == read_multi30k(originals, "train")


def test_a_server_without_ranges_restarts_the_file(tmp_path, manifest, server, originals):
    server.ranges = False
    server.cuts[f"/owner/multi30k/{COMMIT}/multi30k/train.en.gz"] = 1
    assert fetch(manifest, tmp_path / "data", "multi30k") == 0
    assert read_multi30k(tmp_path / "data", "train") == read_multi30k(originals, "train")


def test_base_url_from_the_environment(tmp_path, manifest, server, monkeypatch):
    values = json.loads(manifest.read_text())
    values["base_url"] = "http://127.0.0.1:9"  # loopback discard port: nothing listens
    manifest.write_text(json.dumps(values))
    assert fetch(manifest, tmp_path / "a", "multi30k") == 1
    monkeypatch.setenv(BASE_URL_ENV, server.url)
    assert fetch(manifest, tmp_path / "b", "multi30k") == 0
    assert fetch(manifest, tmp_path / "c", "multi30k", "--base-url", server.url) == 0


def test_list_and_unknown_corpus(tmp_path, manifest, capsys):
    assert fetch(manifest, tmp_path, "--list") == 0
    assert "multi30k             6 files" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stop:
        fetch(manifest, tmp_path, "multi31k")
    assert stop.value.code == 2 and "unknown corpus multi31k; choose from multi30k, wikitext" in capsys.readouterr().err


def test_the_committed_manifest_covers_every_file_the_readers_open(tmp_path):
    """Stand-in files at the manifest's paths only: every reader finds what it opens."""
    manifest = load_manifest()
    assert list(manifest.corpora) == [
        "multi30k",
        "opus_mt_testsets",
        "enwiki",
        "wikitext",
    ]  # the smallest and most used first
    for files in manifest.corpora.values():
        for entry in files:
            path = tmp_path / entry.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(gzip.compress(b'<doc id="1" url="" title="T">\nT\n\nA line.\n</doc>\n'))
            assert entry.url.split("/")[2].isalnum() and len(entry.url.split("/")[2]) == 40  # owner/repo/<commit>/...
    for split in SPLITS:
        read_multi30k(tmp_path, split)
    read_ru_en(tmp_path)
    read_de_en_news(tmp_path)
    assert read_enwiki(tmp_path)["train"]
    for split in WIKITEXT_FILES:
        read_wikitext(tmp_path, split)


@pytest.mark.needs_corpus("multi30k", "opus_mt_testsets", "enwiki", "wikitext")
def test_the_committed_checksums_match_the_data_folder():
    data_dir = resolve_data_dir()
    for files in load_manifest().corpora.values():
        for entry in files:
            assert has_contents(data_dir / entry.path, entry), entry.path
