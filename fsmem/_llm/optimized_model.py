"""An onnxruntime session whose graph is optimised once per user, not in every process.

    session = open_session(model, model_sha256, options)   # options(level) -> SessionOptions

Optimising the model's graph is most of what making a session costs (about half a second of a cold
search). The first session made from a model saves its optimised graph (``optimized_model_filepath``,
at ``ORT_ENABLE_EXTENDED``, the highest level whose saved graph onnxruntime does not tie to the
hardware) into this user's private cache (:func:`fsmem._llm.file_stamps.private_folder`); later
processes open that copy with optimisation off and answer the same vectors, bit for bit.

The copy is named and recorded by a key of the model's sha256, the onnxruntime version and the
machine (its architecture and CPU flags). It is believed only when it is a plain file of this user's,
owner-only, whose stamp is the one recorded for that key when it was made: a copy missing, planted, a
link, touched since, made for another key, or that onnxruntime cannot open is made again, never used.
"""

from __future__ import annotations

import hashlib
import os
import platform
import stat
from collections.abc import Callable
from pathlib import Path

import onnxruntime as ort

from fsmem._errors import ModelError
from fsmem._llm.file_stamps import owned_privately, private_folder, recall, remember, stamp_of
from fsmem._store.atomic import remove_dead_temps, temp_name

__all__ = ["SAVED_LEVEL", "copy_key", "kept_copy", "open_session"]

SAVED_LEVEL = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
Options = Callable[[ort.GraphOptimizationLevel], ort.SessionOptions]


def copy_key(model_sha256: str) -> str:
    """What an optimised copy was made from and for: the model, onnxruntime, this machine."""
    parts = (model_sha256, ort.__version__, str(SAVED_LEVEL), platform.machine(), _cpu_flags())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def kept_copy(model_sha256: str) -> Path | None:
    """Where the optimised copy of that model is kept on this machine; None without a private cache."""
    folder = private_folder()
    if folder is None:
        return None
    return folder / f"{model_sha256[:16]}-{copy_key(model_sha256)[:16]}.onnx"


def open_session(model: Path, model_sha256: str, options: Options) -> ort.InferenceSession:
    """A session of ``model`` (whose sha256 is given): from the kept optimised copy when it is
    believed, else from the model itself, saving the copy for the next process."""
    copy = kept_copy(model_sha256)
    if copy is None:
        return _session(model, options(SAVED_LEVEL))
    key = copy_key(model_sha256)
    if _believed(copy, key):
        try:
            return _session(copy, options(ort.GraphOptimizationLevel.ORT_DISABLE_ALL))
        except ModelError:
            pass  # unreadable though unchanged since it was made: made again below
    return _make(model, copy, key, options)


def _believed(copy: Path, key: str) -> bool:
    try:
        info = os.lstat(copy)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and owned_privately(info) and recall(copy) == key


def _make(model: Path, copy: Path, key: str, options: Options) -> ort.InferenceSession:
    remove_dead_temps(copy.parent, deep=False)  # a copy of 90 MB left half-written by a process that died
    temp = temp_name(copy)
    chosen = options(SAVED_LEVEL)
    chosen.optimized_model_filepath = str(temp)
    try:
        session = _session(model, chosen)
    except ModelError:
        temp.unlink(missing_ok=True)
        raise
    try:
        os.chmod(temp, 0o600)
        os.replace(temp, copy)
        remember(copy, key, stamp_of(copy))
    except OSError:
        temp.unlink(missing_ok=True)  # the next process tries again; this one has its session
        return session
    for old in copy.parent.glob(f"{copy.name[:16]}-*.onnx"):  # made by another onnxruntime or machine
        if old != copy:
            old.unlink(missing_ok=True)
    return session


def _session(path: Path, options: ort.SessionOptions) -> ort.InferenceSession:
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as error:  # noqa: BLE001 - onnxruntime's errors have no common public base
        raise ModelError(f"onnxruntime could not load {path} ({error})") from error


def _cpu_flags() -> str:
    """The CPU's feature flags as Linux tells them (what onnxruntime's kernels pick by); "" elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return ""
