"""A search's view of the kept vectors (:mod:`fsmem._index.nearest`), kept on disk beside the keep, so
a new process loads its codes instead of reading and coding every vector again.

    view = load_kept(file, keep, model, key, waiting)   # None unless the file is that key's view, whole
    save_kept(file, model, view)                        # by the process that built it

The file (``vectors.sqlite3.view`` beside the folder's keep) is derived state: written to a temp file
and renamed, never fsynced; a numpy archive (``.npz``, no pickles) of the codes, scales, each file's
first row, the files and their versions, and a header naming the model, the view's key (the keep's
lasting mark, the index's manifest and generation: ``Meaning.view``) and a CRC-32 of each array. A file
that is not a plain file of this user's, or whose model, key, shapes or checksums disagree, is not
believed: the view is built from the keep again and saved over it.
"""

from __future__ import annotations

import json
import os
import stat
import zipfile
import zlib
from pathlib import Path

import numpy as np

from fsmem._index.nearest import View
from fsmem._index.vectors import VectorKeep
from fsmem._store.atomic import temp_name

__all__ = ["load_kept", "save_kept"]

FORMAT = 1
_ARRAYS = ("codes", "scales", "starts", "files", "versions")


def save_kept(file: Path, model: str, view: View) -> None:
    """Keep ``view`` in ``file``; nothing when it cannot be written (the next process builds its own)."""
    arrays = {
        "codes": np.ascontiguousarray(view.codes),
        "scales": np.ascontiguousarray(view.scales),
        "starts": np.asarray(view.starts, dtype=np.int64),
        "files": _joined(view.files),
        "versions": _joined(view.versions),
    }
    header = {
        "format": FORMAT,
        "model": model,
        "key": repr(view.key),
        "crc": {name: zlib.crc32(array.data) for name, array in arrays.items()},
    }
    temp = temp_name(file)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            np.savez(
                handle,
                header=np.frombuffer(json.dumps(header).encode(), np.uint8),
                codes=arrays["codes"],
                scales=arrays["scales"],
                starts=arrays["starts"],
                files=arrays["files"],
                versions=arrays["versions"],
            )
        os.replace(temp, file)
    except OSError:
        temp.unlink(missing_ok=True)


def load_kept(file: Path, keep: VectorKeep, model: str, key: object, waiting: int) -> View | None:
    """The view kept in ``file`` when it is ``model``'s under ``key``, whole; else None."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return None  # a link or another's: planted, not ours
        try:
            with np.load(handle, allow_pickle=False) as kept:
                header = json.loads(kept["header"].tobytes())
                if header.get("format") != FORMAT or header.get("model") != model or header.get("key") != repr(key):
                    return None  # read before the arrays: a stale view costs one small read
                arrays = {name: kept[name] for name in _ARRAYS}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, AttributeError):
            return None
    crc = header.get("crc")
    if not isinstance(crc, dict) or any(zlib.crc32(arrays[name].data) != crc.get(name) for name in _ARRAYS):
        return None
    codes, scales, starts = arrays["codes"], arrays["scales"], arrays["starts"]
    if any(arrays[name].dtype != np.uint8 or arrays[name].ndim != 1 for name in ("files", "versions")):
        return None
    files, versions = _split(arrays["files"]), _split(arrays["versions"])
    if not (
        codes.dtype == np.int8
        and codes.ndim == 2
        and scales.dtype == np.float32
        and scales.shape == (len(codes),)
        and starts.dtype == np.int64
        and starts.shape == (len(files),)
        and len(versions) == len(files)
        and (not len(files) or (starts[0] == 0 and bool(np.all(np.diff(starts) > 0)) and starts[-1] < len(codes)))
    ):
        return None
    return View(
        key,
        files,
        versions,
        starts.astype(np.intp),
        codes,
        scales,
        lambda wanted: keep.vectors_of(model, wanted),
        waiting,
    )


def _joined(names: list[str]) -> np.ndarray:
    return np.frombuffer("\0".join(names).encode("utf-8", "surrogateescape"), np.uint8)


def _split(joined: np.ndarray) -> list[str]:
    return joined.tobytes().decode("utf-8", "surrogateescape").split("\0") if len(joined) else []
