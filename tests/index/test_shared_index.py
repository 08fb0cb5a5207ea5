"""Many ``Memory`` objects on one root in one process share one index and one watcher: a server that
opens one per request stays as fast and as fresh as one that opens one, and closing some of them
never breaks the others."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import fsmem
from fsmem._env.config import Settings
from fsmem._index.state import heartbeat_file
from tests.conftest import write

SETTINGS = Settings(durable=False)


def paths(hits) -> list[str]:
    return [hit.path for hit in hits]


def run_in_threads(work, count: int) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(number: int) -> None:
        try:
            work(number)
        except BaseException as error:  # noqa: BLE001 - collected and asserted on below
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(number,)) for number in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a thread never finished"
    return errors


def test_fifty_memories_searching_and_writing_in_threads_share_one_index_and_find_every_write(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    fsmem.open(root, create=True, settings=SETTINGS).close()
    memories = [fsmem.open(root, settings=SETTINGS) for _ in range(50)]
    assert all(memory._share is None for memory in memories)  # nothing is opened until used

    def work(number: int) -> None:
        mine, other = memories[number], memories[(number + 17) % 50]
        word = f"okapi{number}x"
        result = mine.run(thread_id=f"t{number}").call(
            {"command": "write", "path": f"notes/n{number}.md", "content": f"# N\n\nthe {word}\n"}
        )
        assert result["ok"], result
        assert paths(other.search(word)) == [f"notes/n{number}.md"]  # fresh from any of them

    assert run_in_threads(work, 50) == []
    assert len({id(memory.index) for memory in memories}) == 1
    watchers = {id(memory._watcher) for memory in memories}
    assert len(watchers) == 1 and memories[0]._watcher is not None and memories[0]._watcher.watching
    assert len(memories[3].search("the", limit=100)) == 50
    for memory in memories:
        memory.close()
    assert not heartbeat_file(root / ".fsmem").exists()  # the last one out stopped the watcher


def test_closing_some_memories_while_others_search_breaks_none_and_the_last_stops_the_watcher(
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    fsmem.open(root, create=True, settings=SETTINGS).close()
    write(root, "MEMORY.md", "# Project\n\nWe deploy on Fridays.\n")
    memories = [fsmem.open(root, settings=SETTINGS) for _ in range(20)]
    assert paths(memories[0].search("fridays")) == ["MEMORY.md"]
    watcher = memories[0]._watcher
    assert watcher is not None and watcher.watching

    def work(number: int) -> None:
        memory = memories[number]
        if number % 2:
            memory.close()
            return
        run = memory.run(thread_id=f"t{number}")
        for round_ in range(3):
            assert paths(memory.search("fridays")) == ["MEMORY.md"]
            path = f"w{number}-{round_}.md"
            assert run.call({"command": "write", "path": path, "content": f"# W\n\nnumbat{number}x{round_}\n"})["ok"]
            assert paths(memory.search(f"numbat{number}x{round_}")) == [path]

    assert run_in_threads(work, 20) == []
    assert watcher.unapplied() is not None  # running: ten still hold it
    survivors = memories[0::2]
    write(root, "late.md", "# Late\n\nthe quokka\n")  # a hand edit: the shared watcher finds it
    deadline = time.monotonic() + 15
    while paths(survivors[-1].search("quokka")) != ["late.md"]:
        assert time.monotonic() < deadline, "the watcher never indexed a hand edit"
        time.sleep(0.02)
    for memory in survivors[:-1]:
        memory.close()
    assert watcher.unapplied() is not None and paths(survivors[-1].search("fridays")) == ["MEMORY.md"]
    survivors[-1].close()
    assert watcher.unapplied() is None  # stopped
    assert not heartbeat_file(root / ".fsmem").exists()


def test_a_memory_opened_after_all_closed_starts_a_watcher_of_its_own(tmp_path: Path) -> None:
    root = tmp_path / "root"
    first = fsmem.open(root, create=True, settings=SETTINGS)
    first.search("anything")
    old = first._watcher
    first.close()
    assert old is not None and old.unapplied() is None
    again = fsmem.open(root, settings=SETTINGS)
    write(root, "MEMORY.md", "# Project\n\nthe capybara\n")
    assert paths(again.search("capybara")) == ["MEMORY.md"]
    assert again._watcher is not None and again._watcher is not old and again._watcher.watching
    again.close()


def test_memories_with_other_settings_keep_indexes_of_their_own(tmp_path: Path) -> None:
    root = tmp_path / "root"
    one = fsmem.open(root, create=True, settings=SETTINGS)
    unwatched = fsmem.open(root, settings=Settings(durable=False, watch=False))
    write(root, "MEMORY.md", "# Project\n\nthe lemur\n")
    assert paths(one.search("lemur")) == paths(unwatched.search("lemur")) == ["MEMORY.md"]
    assert one.index is not unwatched.index and unwatched._watcher is None
    one.close()
    unwatched.close()


def test_memories_dropped_without_close_leave_their_shares(tmp_path: Path) -> None:
    import gc

    from fsmem._index import shared

    root = tmp_path / "root"
    keeper = fsmem.open(root, create=True, settings=SETTINGS)
    write(root, "MEMORY.md", "# Project\n\nthe tapir\n")
    assert paths(keeper.search("tapir")) == ["MEMORY.md"]
    for _ in range(30):  # a server that opens one per request and forgets to close it
        assert paths(fsmem.open(root, settings=SETTINGS).search("tapir")) == ["MEMORY.md"]
    gc.collect()
    (entry,) = [entry for entry in shared._registry.values() if entry.index is keeper.index]
    assert len(entry.members) == 1
    keeper.close()
