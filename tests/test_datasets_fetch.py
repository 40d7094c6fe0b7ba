"""Cache / mirror / download resolution, sha256 checks and the .Z decoder."""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import subprocess
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest

from alprbf.datasets import fetch
from alprbf.datasets.fetch import (
    ChecksumError,
    DataFile,
    MissingFileError,
    data_home,
    mirror_dir,
    resolve,
    unlzw,
)
from alprbf.errors import UserError


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


# --------------------------------------------------------------------------- .Z encoder (oracle)


def compress_Z(data: bytes, maxbits: int = 16) -> bytes:
    """Unix ``compress`` encoder in block mode, following compress.c's output grouping:
    codes are packed LSB-first in groups of eight; a width change or a CLEAR flushes the
    whole group.  Its output is checked against ``gzip -d`` before it is used as an oracle."""
    out = bytearray([0x1F, 0x9D, maxbits | 0x80])
    st = {"n_bits": 9, "maxcode": 511, "buf": 0, "offset": 0, "clear": False, "free": 257}
    maxmax = 1 << maxbits

    def flush(nbytes):
        out.extend(st["buf"].to_bytes(st["n_bits"], "little")[:nbytes])
        st["buf"], st["offset"] = 0, 0

    def output(code):
        st["buf"] |= code << st["offset"]
        st["offset"] += st["n_bits"]
        if st["offset"] == 8 * st["n_bits"]:
            flush(st["n_bits"])
        if st["free"] > st["maxcode"] or st["clear"]:
            if st["offset"]:
                flush(st["n_bits"])
            if st["clear"]:
                st.update(n_bits=9, maxcode=511, clear=False)
            else:
                st["n_bits"] += 1
                st["maxcode"] = maxmax if st["n_bits"] == maxbits else (1 << st["n_bits"]) - 1

    if not data:
        return bytes(out)
    table: dict[tuple[int, int], int] = {}
    ent = data[0]
    for c in data[1:]:
        if (ent, c) in table:
            ent = table[(ent, c)]
            continue
        output(ent)
        if st["free"] < maxmax:
            table[(ent, c)] = st["free"]
            st["free"] += 1
        else:  # table full: clear it (compress does so when the ratio drops)
            table.clear()
            st.update(free=257, clear=True)
            output(256)
        ent = c
    output(ent)
    if st["offset"]:
        flush((st["offset"] + 7) // 8)
    return bytes(out)


def _payloads():
    rng = np.random.default_rng(0)
    return [b"x", b"abababababab" * 40,
            ",".join(f"{v:.2f}" for v in rng.normal(size=6000)).encode(),
            bytes(rng.integers(0, 256, 4000, dtype=np.uint8))]


@pytest.mark.parametrize("maxbits", [9, 12, 16])
def test_unlzw_inverts_compress_checked_by_gzip(maxbits):
    gz = shutil.which("gzip")
    for payload in _payloads():
        z = compress_Z(payload, maxbits)
        if gz:  # independent decoder: GNU gzip reads .Z files
            res = subprocess.run([gz, "-dc"], input=z, capture_output=True, check=False)
            assert res.stdout == payload, "test encoder disagrees with gzip"
        assert unlzw(z) == payload


def test_unlzw_rejects_non_z_data():
    with pytest.raises(ValueError, match="magic"):
        unlzw(b"hello")


# --------------------------------------------------------------------------- resolution


@pytest.fixture
def env(tmp_path, monkeypatch):
    home, mirror = tmp_path / "home", tmp_path / "mirror"
    home.mkdir()
    mirror.mkdir()
    monkeypatch.setenv("ALPRBF_DATA_HOME", str(home))
    monkeypatch.delenv("ALPRBF_DATA_MIRROR", raising=False)
    return home, mirror


class FakeResponse(io.BytesIO):
    def __init__(self, data: bytes):
        super().__init__(data)
        self.headers = {"Content-Length": str(len(data))}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def serve(monkeypatch, table: dict[str, bytes]):
    """Patch urlopen: URLs in ``table`` answer with their bytes, others fail like no network."""
    calls = []

    def urlopen(req, timeout=None):
        url = req.full_url
        calls.append(url)
        if url not in table:
            raise urllib.error.URLError("Name or service not known")
        return FakeResponse(table[url])

    monkeypatch.setattr(fetch.urllib.request, "urlopen", urlopen)
    return calls


CONTENT = b"1,2,a\n3,4,b\n"
F = DataFile("toy.data", "https://example.org/toy.data", sha(CONTENT))


def test_data_home_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("ALPRBF_DATA_HOME", str(tmp_path / "env"))
    assert data_home() == tmp_path / "env"
    assert data_home(tmp_path / "arg") == tmp_path / "arg"
    monkeypatch.delenv("ALPRBF_DATA_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data_home() == fetch.default_cache_dir()


def test_mirror_is_used_and_verified(env, monkeypatch):
    home, mirror = env
    (mirror / "toy").mkdir()
    (mirror / "toy" / "toy.data").write_bytes(CONTENT)
    calls = serve(monkeypatch, {})
    path, origin = resolve("toy", "toy", F, mirror=mirror)
    assert (origin, path) == ("mirror", mirror / "toy" / "toy.data")
    assert calls == []  # nothing downloaded, nothing copied into the cache
    assert not (home / "toy").exists()
    monkeypatch.setenv("ALPRBF_DATA_MIRROR", str(mirror))
    assert resolve("toy", "toy", F)[1] == "mirror"


def test_cache_wins_over_mirror(env):
    home, mirror = env
    for base in (home, mirror):
        (base / "toy").mkdir()
        (base / "toy" / "toy.data").write_bytes(CONTENT)
    assert resolve("toy", "toy", F, mirror=mirror)[1] == "cache"


def test_checksum_mismatch_is_refused_with_both_digests(env):
    home, mirror = env
    (mirror / "toy").mkdir()
    bad = mirror / "toy" / "toy.data"
    bad.write_bytes(CONTENT + b"5,6,a\n")
    with pytest.raises(ChecksumError) as exc:
        resolve("toy", "toy", F, mirror=mirror, allow_download=False)
    msg = str(exc.value)
    assert str(bad) in msg and F.sha256 in msg and sha(bad.read_bytes()) in msg
    assert "\n" not in msg


def test_alternative_digest_is_accepted(env):
    home, mirror = env
    variant = CONTENT.rstrip(b"\n")
    f = DataFile("toy.data", "u", sha(CONTENT), alt_sha256=(sha(variant),))
    (mirror / "toy").mkdir()
    (mirror / "toy" / "toy.data").write_bytes(variant)
    assert resolve("toy", "toy", f, mirror=mirror)[1] == "mirror"


def test_missing_file_error_is_actionable(env, monkeypatch):
    home, mirror = env
    serve(monkeypatch, {})
    with pytest.raises(MissingFileError) as exc:
        resolve("toy", "toy", F, mirror=mirror)
    msg = str(exc.value)
    for needle in (str(home / "toy"), str(mirror / "toy"), "ALPRBF_DATA_HOME", "--data-home",
                   F.url, "download failed"):
        assert needle in msg
    with pytest.raises(MissingFileError, match="ALPRBF_DATA_MIRROR or --mirror"):
        resolve("toy", "toy", F)  # no mirror configured: says how to set one


def test_missing_mirror_directory(env, tmp_path):
    with pytest.raises(UserError, match="not a directory"):
        mirror_dir(tmp_path / "nope")
    with pytest.raises(UserError, match="not a directory"):
        resolve("toy", "toy", F, mirror=tmp_path / "nope")


def test_download_verifies_and_renames_atomically(env, monkeypatch):
    home, _ = env
    calls = serve(monkeypatch, {F.url: CONTENT})
    path, origin = resolve("toy", "toy", F, progress=False)
    assert origin == "download" and path.read_bytes() == CONTENT
    assert calls == [F.url]
    assert sorted(p.name for p in (home / "toy").iterdir()) == ["toy.data"]  # no temp left
    assert resolve("toy", "toy", F)[1] == "cache"


def test_download_with_bad_checksum_leaves_nothing(env, monkeypatch):
    home, _ = env
    serve(monkeypatch, {F.url: b"tampered\n"})
    with pytest.raises(ChecksumError):
        resolve("toy", "toy", F, progress=False)
    assert list((home / "toy").iterdir()) == []


def test_download_of_compressed_and_archived_copies(env, monkeypatch):
    home, _ = env
    fz = DataFile("z.data", "https://example.org/z.data.Z", sha(CONTENT), compression="Z")
    fg = DataFile("g.data", "https://example.org/g.data.gz", sha(CONTENT), compression="gz")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("pkg/data/m.dat", CONTENT)
    fm = DataFile("m.dat", "https://example.org/pkg.whl", sha(CONTENT), member="pkg/data/m.dat")
    fb = DataFile("b.data", "https://dead.example.org/b.data", sha(CONTENT),
                  alt_urls=("https://example.org/b.data",))
    serve(monkeypatch, {fz.url: compress_Z(CONTENT), fg.url: gzip.compress(CONTENT),
                        fm.url: buf.getvalue(), "https://example.org/b.data": CONTENT})
    for f in (fz, fg, fm, fb):
        path, origin = resolve("toy", "toy", f, progress=False)
        assert origin == "download" and Path(path).read_bytes() == CONTENT
