"""The folder's jail: where a normalized path under a folder really is, and no further.

    jail = Jail(root, ".fsmem")
    jail.resolve("seo/titles.md")     # the real path; BadPath if a link on the way leads out of the
                                      # folder, or into its private part (fsmem's own state)

A symlink anywhere on the way may point inside the folder, never out of it, and never into the
private folder. The memory root is jailed so (``Drive.resolve``): there a link inside is the path it
leads to. A folder ``fsmem sync`` mirrors a project into (its private part: ``.fsmem-sync/``) is
jailed with ``links=False``: each of its paths is a file of the project's own, so a link on the way,
even one inside, would make two of the project's paths one file (a pull into one would be pushed as
the other's hand edit), and is refused.
"""

from __future__ import annotations

import os
import stat as stat_module
from pathlib import Path

from fsmem._errors import BadPath
from fsmem._store.folder.ondisk import is_case_blind, nfc, other_spelling, spelled, spelled_path


class Jail:
    def __init__(self, root: Path, private: str, *, name: str = "the memory folder", links: bool = True) -> None:
        self.root = Path(os.path.realpath(root))
        self.private = self.root / private  # the folder's own state: no link may lead there
        self.name = name  # how messages call the folder
        self.links = links  # whether a link that stays inside the folder is followed
        self._root_str, self._private_str = str(self.root), str(self.private)
        self._case_blind: bool | None = None  # found out on first use (once the folder can tell)

    def resolve(self, path: str) -> Path:
        """The real location of a normalized path, refusing any that leads outside the folder or into
        its private part."""
        real = self.real(path)
        where = str(real)  # real paths are normalized: a prefix test is the parents test, faster
        if where != self._root_str and not where.startswith(self._root_str + "/"):
            raise BadPath(f"{path!r} leads outside {self.name} (through a link); use a path inside it")
        if where == self._private_str or where.startswith(self._private_str + "/"):
            raise BadPath(f"{path!r} leads into fsmem's own state, which is not memory; use another path")
        if not self.links and not self._as_named(real, path):
            raise BadPath(
                f"{path!r} goes through a link in {self.name}; each path there is a file of its own, so no "
                "link is followed (replace the link by the folder or file itself)"
            )
        return real

    def _as_named(self, real: Path, path: str) -> bool:
        """Whether ``real`` is ``root/path`` itself (no link on the way), as the disk may spell it."""
        named, found = nfc(f"{self._root_str}/{path}" if path else self._root_str), nfc(str(real))
        return found == named or bool(self._case_blind) and found.casefold() == named.casefold()

    def real(self, path: str) -> Path:
        """``os.path.realpath`` of ``root/path``, cheaply: the root is real already, so only the parts
        under it can be links; with none among them (the usual case) the path is its own real path."""
        if self._case_blind is None:
            self._case_blind = is_case_blind(self.root)
        candidate = self.root / path if path else self.root
        parts = path.split("/") if path else []
        if any(part in ("", ".", "..") for part in parts):  # not normalized: let realpath settle it
            return self._realpath(candidate)
        current = str(self.root)
        for index, part in enumerate(parts):
            if self._case_blind:  # "memory.md" is MEMORY.md there: use the name as it is on disk
                part = parts[index] = spelled(current, part)
            step = f"{current}/{part}"
            try:
                mode = os.lstat(step).st_mode
            except FileNotFoundError:
                other = other_spelling(current, part)  # a name made by hand in another Unicode form
                if other is None:
                    return Path(step, *parts[index + 1 :])  # nothing exists below here, so no link either
                step = f"{current}/{other}"
                try:
                    mode = os.lstat(step).st_mode
                except OSError:
                    return self._realpath(candidate)
            except NotADirectoryError:
                return Path(step, *parts[index + 1 :])
            except OSError:
                return self._realpath(candidate)
            if stat_module.S_ISLNK(mode):
                return self._realpath(Path(step, *parts[index + 1 :]))
            current = step
        return Path(current)

    def _realpath(self, path: Path) -> Path:
        """Where a path with a link or a dot on the way leads; on a case-blind file system, with the
        names under the root as spelled on disk (what a link names may be spelled in any case)."""
        real = Path(os.path.realpath(path))
        return spelled_path(self.root, real) if self._case_blind else real
