"""A worker that makes one file on the PostgreSQL store in a change of its own (tests/store/postgres/test_pg_tx.py).

    python tests/procs/pg_create_worker.py URL PROJECT PATH [GO_FILE]

It opens a change and writes PATH (a new file), prints ``{"inside": PATH}``, waits for GO_FILE when
given (holding the change open), then commits and prints ``{"ok": true}`` or ``{"code": CODE}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fsmem._errors import RequestError
from fsmem._store.postgres.store import PgStore
from tests.procs.common import emit, wait_for_file


def main(url: str, project: str, path: str, go_file: str | None) -> int:
    store = PgStore.open(url, project, create=False)
    try:
        with store.change("write", thread="creator") as tx:
            tx.write(path, b"made by " + path.encode() + b"\n", expect=None)
            emit(inside=path)
            if go_file:
                wait_for_file(Path(go_file))
        emit(ok=True)
    except RequestError as error:
        emit(code=error.code, message=error.message)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None))
