"""What the features need of a project's memory: its store, its settings, its name, its search and
the files that link to a path.

``fsmem._memory.memory.Memory`` is one; the features (levels, proposals, context, the tool) are typed
on this protocol, not on ``Memory``, so ``Memory`` can compose them without a circle.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from fsmem._core.fusion import SearchResults
from fsmem._env.config import Settings
from fsmem._store.interface import Store


class Project(Protocol):
    @property
    def drive(self) -> Store: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def name(self) -> str: ...

    def search(
        self,
        query: str,
        *,
        regex: bool = False,
        include: str | Iterable[str] | None = None,
        exclude: str | Iterable[str] | None = None,
        since: str | datetime | None = None,
        limit: int = 10,
    ) -> SearchResults: ...

    def linking_to(self, paths: Iterable[str]) -> list[str]: ...
