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
    # 3: tenants apart outside the rows (docs/postgres.md, "Tenants apart"). A project's locks become
    # rows of fsmem.locks (``fsmem._store.postgres.locks``: advisory keys are any role's to take) and
    # its channel is named by a secret only its rows show. An older worker still running writes no
    # log row (row_locks has no default), so its changes are refused whole, never made under locks
    # this fsmem no longer takes. Where row-level security already keeps tenants apart (the recipe
    # run before this migration), fsmem.locks gets the same policies and grants as fsmem.files: table-level
    # SELECT and INSERT, UPDATE of one column only (enough to lock a row, not to LOCK TABLE).
    """
    -- 122 random bits as 32 hex digits: "fsmem_<secret>" fits a channel's 63 bytes.
    ALTER TABLE fsmem.projects ADD COLUMN secret text NOT NULL DEFAULT replace(gen_random_uuid()::text, '-', '');
    CREATE TABLE fsmem.locks (
        project integer NOT NULL REFERENCES fsmem.projects (id),
        key bigint NOT NULL,
        PRIMARY KEY (project, key)
    );
    INSERT INTO fsmem.locks (project, key)  -- locks.NAMED
        SELECT id, k FROM fsmem.projects, unnest(ARRAY[1, 2, 4, 5, 6]) AS k;
    ALTER TABLE fsmem.log ADD COLUMN row_locks boolean NOT NULL DEFAULT true;
    ALTER TABLE fsmem.log ALTER COLUMN row_locks DROP DEFAULT;
    DO $$
    DECLARE
        policy record;
        grantee text;
    BEGIN
        IF (SELECT relrowsecurity FROM pg_class WHERE oid = 'fsmem.files'::regclass) THEN
            ALTER TABLE fsmem.locks ENABLE ROW LEVEL SECURITY;
        END IF;
        FOR policy IN SELECT * FROM pg_policies WHERE schemaname = 'fsmem' AND tablename = 'files' LOOP
            EXECUTE format(
                'CREATE POLICY %I ON fsmem.locks AS %s FOR %s TO %s', policy.policyname, policy.permissive,
                policy.cmd, (SELECT string_agg(CASE WHEN r = 'public' THEN 'PUBLIC' ELSE quote_ident(r) END, ', ')
                             FROM unnest(policy.roles) AS r))
                || coalesce(' USING (' || policy.qual || ')', '')
                || coalesce(' WITH CHECK (' || policy.with_check || ')', '');
        END LOOP;
        FOR grantee IN
            SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
            FROM pg_class AS c, aclexplode(c.relacl) AS a
            WHERE c.oid = 'fsmem.files'::regclass AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner
        LOOP
            EXECUTE format('GRANT SELECT, INSERT, UPDATE (key) ON fsmem.locks TO %s', grantee);
        END LOOP;
    END
    $$;
    """,
    # 4: a project's key (``fsmem._store.postgres.projects.project_key``): names that differ only by case,
    # spaces or Unicode form are one project. Projects made before have none (NULL, never equal) and
    # are still found by their exact name. A proposal's JSON is kept as written (json, not jsonb, which
    # reorders keys): it comes back, and copies into a folder, byte for byte as a folder keeps it.
    # Rows are deleted by marking them gone, so no role needs the table-level DELETE that allows
    # LOCK TABLE (below; docs/postgres.md, "Tenants apart").
    """
    ALTER TABLE fsmem.projects ADD COLUMN key text UNIQUE;
    ALTER TABLE fsmem.proposals
        ALTER COLUMN request TYPE json USING request::json,
        ALTER COLUMN base TYPE json USING base::json,
        ALTER COLUMN extra DROP DEFAULT,
        ALTER COLUMN extra TYPE json USING extra::json,
        ALTER COLUMN extra SET DEFAULT '{}';
    -- Tenants apart outside the rows, again: table-level UPDATE or DELETE lets a role LOCK TABLE in any
    -- mode (an idle transaction holding fsmem.files stops every project), and row-level security does
    -- not stop it. So a row is deleted by marking it gone (a column-level UPDATE) and a trigger, run as
    -- this schema's owner, deletes the row the role could mark: its own project's, by row-level security.
    ALTER TABLE fsmem.files ADD COLUMN gone boolean NOT NULL DEFAULT false;
    ALTER TABLE fsmem.kept_versions ADD COLUMN gone boolean NOT NULL DEFAULT false;
    ALTER TABLE fsmem.proposals ADD COLUMN gone boolean NOT NULL DEFAULT false;
    CREATE FUNCTION fsmem.drop_gone_file() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog
        AS $$ BEGIN DELETE FROM fsmem.files WHERE project = NEW.project AND path = NEW.path; RETURN NULL; END $$;
    CREATE FUNCTION fsmem.drop_gone_version() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog
        AS $$ BEGIN DELETE FROM fsmem.kept_versions WHERE id = NEW.id; RETURN NULL; END $$;
    CREATE FUNCTION fsmem.drop_gone_proposal() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog
        AS $$ BEGIN DELETE FROM fsmem.proposals WHERE project = NEW.project AND id = NEW.id; RETURN NULL; END $$;
    REVOKE EXECUTE ON FUNCTION fsmem.drop_gone_file(), fsmem.drop_gone_version(), fsmem.drop_gone_proposal()
        FROM PUBLIC;
    CREATE TRIGGER drop_gone AFTER UPDATE OF gone ON fsmem.files
        FOR EACH ROW WHEN (NEW.gone) EXECUTE FUNCTION fsmem.drop_gone_file();
    CREATE TRIGGER drop_gone AFTER UPDATE OF gone ON fsmem.kept_versions
        FOR EACH ROW WHEN (NEW.gone) EXECUTE FUNCTION fsmem.drop_gone_version();
    CREATE TRIGGER drop_gone AFTER UPDATE OF gone ON fsmem.proposals
        FOR EACH ROW WHEN (NEW.gone) EXECUTE FUNCTION fsmem.drop_gone_proposal();
    -- Every other role that may change these tables keeps what fsmem does, and no more (MAINTAIN:
    -- PostgreSQL 17's, which allows LOCK TABLE too).
    DO $$
    DECLARE
        granted record;
    BEGIN
        FOR granted IN
            SELECT c.relname, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END AS who,
                   a.privilege_type AS what
            FROM pg_class AS c, aclexplode(c.relacl) AS a
            WHERE c.relnamespace = 'fsmem'::regnamespace AND c.relname IN ('files', 'kept_versions', 'proposals')
                AND a.privilege_type IN ('UPDATE', 'DELETE', 'TRUNCATE', 'MAINTAIN') AND a.grantee <> c.relowner
        LOOP
            EXECUTE format('REVOKE %s ON fsmem.%I FROM %s', granted.what, granted.relname, granted.who);
            EXECUTE format(
                'GRANT UPDATE (%s) ON fsmem.%I TO %s',
                CASE granted.relname WHEN 'files' THEN 'content, version, modified, path, gone' ELSE 'gone' END,
                granted.relname, granted.who);
        END LOOP;
    END
    $$;
    """,
    # 5: recall by meaning: passage vectors are derived state, kept in the database so a new worker does
    # not embed a project again (``fsmem._index.pg_vectors``), keyed by (project, model, path, file version),
    # never outliving the version they came from. Row-level security and grants as fsmem.files'. (Written idempotent.)
    """
    CREATE TABLE IF NOT EXISTS fsmem.embedded (
        project integer NOT NULL REFERENCES fsmem.projects (id),
        model text NOT NULL,
        path text COLLATE "C" NOT NULL,
        version text NOT NULL,
        made timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (project, model, path, version)
    );
    CREATE TABLE IF NOT EXISTS fsmem.passages (
        project integer NOT NULL REFERENCES fsmem.projects (id),
        model text NOT NULL,
        path text COLLATE "C" NOT NULL,
        version text NOT NULL,
        n integer NOT NULL,
        line integer NOT NULL,
        text text NOT NULL,
        vector bytea NOT NULL,
        PRIMARY KEY (project, model, path, version, n)
    );
    -- Deleted as migration 4 deletes rows (marked gone, a trigger run as the owner deletes them), so no
    -- role needs the table-level DELETE that would let it LOCK TABLE these tables for every project.
    ALTER TABLE fsmem.embedded ADD COLUMN IF NOT EXISTS gone boolean NOT NULL DEFAULT false;
    ALTER TABLE fsmem.passages ADD COLUMN IF NOT EXISTS gone boolean NOT NULL DEFAULT false;
    CREATE OR REPLACE FUNCTION fsmem.drop_gone_embedded() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog
        AS $$ BEGIN DELETE FROM fsmem.embedded WHERE project = NEW.project AND model = NEW.model
            AND path = NEW.path AND version = NEW.version; RETURN NULL; END $$;
    CREATE OR REPLACE FUNCTION fsmem.drop_gone_passage() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog
        AS $$ BEGIN DELETE FROM fsmem.passages WHERE project = NEW.project AND model = NEW.model
            AND path = NEW.path AND version = NEW.version AND n = NEW.n; RETURN NULL; END $$;
    REVOKE EXECUTE ON FUNCTION fsmem.drop_gone_embedded(), fsmem.drop_gone_passage() FROM PUBLIC;
    DROP TRIGGER IF EXISTS drop_gone ON fsmem.embedded;
    CREATE TRIGGER drop_gone AFTER UPDATE OF gone ON fsmem.embedded
        FOR EACH ROW WHEN (NEW.gone) EXECUTE FUNCTION fsmem.drop_gone_embedded();
    DROP TRIGGER IF EXISTS drop_gone ON fsmem.passages;
    CREATE TRIGGER drop_gone AFTER UPDATE OF gone ON fsmem.passages
        FOR EACH ROW WHEN (NEW.gone) EXECUTE FUNCTION fsmem.drop_gone_passage();
    DO $$
    DECLARE
        policy record;
        grantee text;
        kept text;
    BEGIN
        FOREACH kept IN ARRAY ARRAY['embedded', 'passages'] LOOP
            IF (SELECT relrowsecurity FROM pg_class WHERE oid = 'fsmem.files'::regclass) THEN
                EXECUTE format('ALTER TABLE fsmem.%I ENABLE ROW LEVEL SECURITY', kept);
            END IF;
            FOR policy IN SELECT * FROM pg_policies WHERE schemaname = 'fsmem' AND tablename = 'files' LOOP
                IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'fsmem' AND tablename = kept
                               AND policyname = policy.policyname) THEN
                    EXECUTE format(
                        'CREATE POLICY %I ON fsmem.%I AS %s FOR %s TO %s', policy.policyname, kept,
                        policy.permissive, policy.cmd,
                        (SELECT string_agg(CASE WHEN r = 'public' THEN 'PUBLIC' ELSE quote_ident(r) END, ', ')
                         FROM unnest(policy.roles) AS r))
                        || coalesce(' USING (' || policy.qual || ')', '')
                        || coalesce(' WITH CHECK (' || policy.with_check || ')', '');
                END IF;
            END LOOP;
            FOR grantee IN
                SELECT DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
                FROM pg_class AS c, aclexplode(c.relacl) AS a
                WHERE c.oid = 'fsmem.files'::regclass AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner
            LOOP
                EXECUTE format('GRANT SELECT, INSERT, UPDATE (gone) ON fsmem.%I TO %s', kept, grantee);
            END LOOP;
        END LOOP;
    END
    $$;
    """,
)

CURRENT = len(MIGRATIONS)
