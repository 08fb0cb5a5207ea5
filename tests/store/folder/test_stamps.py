"""The stamps the facts keep for what they read: plain once the file's last change is older than the
racy window of the read, and one no ``stat`` matches while it is within it (read again next look)."""

from __future__ import annotations

import os

from fsmem._core.search import RACY_WINDOW_NS
from fsmem._store.folder import stamps


def test_a_read_within_the_racy_window_keeps_a_stamp_no_stat_matches(tmp_path, monkeypatch) -> None:
    file = tmp_path / "fact.md"
    file.write_bytes(b"Ana leads the data team.\n")
    info = file.stat()
    changed = max(info.st_mtime_ns, info.st_ctime_ns)
    monkeypatch.setattr(stamps, "_now_ns", lambda: changed + RACY_WINDOW_NS - 1)
    ((data, racy),) = stamps.read_stamped(tmp_path, ["fact.md"]).values()
    assert data == b"Ana leads the data team.\n"
    assert racy != stamps.stamp(tmp_path, "fact.md")
    assert stamps.kept_stamp(tmp_path, "fact.md") == racy
    monkeypatch.setattr(stamps, "_now_ns", lambda: changed + RACY_WINDOW_NS)
    ((_, settled),) = stamps.read_stamped(tmp_path, ["fact.md"]).values()
    assert settled == stamps.stamp(tmp_path, "fact.md") == (info.st_size, info.st_mtime_ns, info.st_ino)
    assert stamps.kept_stamp(tmp_path, "fact.md") == settled
    os.utime(file, ns=(info.st_atime_ns, info.st_mtime_ns))  # ctime moves on: within the window again
    assert stamps.kept_stamp(tmp_path, "fact.md") != stamps.stamp(tmp_path, "fact.md")
