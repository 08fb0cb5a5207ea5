"""The tables of the PostgreSQL store, as numbered migrations applied on open (``fsmem._store.postgres.connection``).

Everything lives in the ``fsmem`` schema, so a database shared with other programs keeps its own
``public`` names. ``fsmem.schema_version`` holds the number of the last migration applied; a store
opened on an older database applies the rest in one transaction, under an advisory lock so two
workers opening at once do not both migrate. Append new migrations; never edit an applied one.
"""

from __future__ import annotations

SCHEMA_LOCK = 0x66736D  # pg_advisory_xact_lock key held while migrating ("fsm")

MIGRATIONS: tuple[str, ...] = (
    # 1: projects, their files, kept versions, the log and proposals.
    """
    CREATE TABLE fsmem.projects (
        id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        name text NOT NULL UNIQUE,
        created timestamptz NOT NULL DEFAULT now()
    );
    -- Paths compare byte-wise (COLLATE "C"): a folder's files are the range [folder/, folder0).
    CREATE TABLE fsmem.files (
        project integer NOT NULL REFERENCES fsmem.projects (id),
        path text COLLATE "C" NOT NULL,
        content bytea NOT NULL,
        version text NOT NULL,
        modified timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (project, path)
    );
    CREATE TABLE fsmem.kept_versions (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        project integer NOT NULL REFERENCES fsmem.projects (id),
        path text COLLATE "C" NOT NULL,
        version text NOT NULL,
        kept_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        command text NOT NULL,
        content bytea NOT NULL
    );
    CREATE INDEX kept_versions_of_path ON fsmem.kept_versions (project, path, id);
    -- Keyed by (project, seq): newest_seq() and changes_since() read one project's end of the index,
    -- however busy the other projects sharing the table are.
    CREATE TABLE fsmem.log (
        seq bigint GENERATED ALWAYS AS IDENTITY,
        project integer NOT NULL REFERENCES fsmem.projects (id),
        time timestamptz NOT NULL DEFAULT clock_timestamp(),
        command text NOT NULL,
        path text COLLATE "C" NOT NULL,
        new_path text COLLATE "C",
        before text,
        after text,
        thread text,
        PRIMARY KEY (project, seq)
    );
    CREATE INDEX log_of_path ON fsmem.log (project, path, seq);
    CREATE INDEX log_of_new_path ON fsmem.log (project, new_path, seq) WHERE new_path IS NOT NULL;
    CREATE TABLE fsmem.proposals (
        project integer NOT NULL REFERENCES fsmem.projects (id),
        id text NOT NULL,
        made_at text NOT NULL,
        thread text,
        scope text NOT NULL,
        request jsonb NOT NULL,
        base jsonb NOT NULL,
        summary text NOT NULL,
        diff text NOT NULL DEFAULT '',
        extra jsonb NOT NULL DEFAULT '{}',
        PRIMARY KEY (project, id)
    );
    """,
    # 2: each project's random identity: what a worker's search cache and a sync folder are tied to, so
    # neither mistakes another project (or a project made again under the same name) for its own.
    """
    ALTER TABLE fsmem.projects ADD COLUMN uid uuid NOT NULL DEFAULT gen_random_uuid();
    """,
)

CURRENT = len(MIGRATIONS)
