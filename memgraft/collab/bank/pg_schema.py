"""The PostgreSQL bank's DDL: SQLite's tables (``schema.TABLES``) with identity and vector columns, triggers that
refuse what SQLite's refuse, row-level security per team, and the names of each large team's HNSW index.

Why apart from ``postgres``: the DDL is what ``migrate`` upgrades from and to, and is read in one place.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
import re
from typing import Any

from memgraft.collab.bank.backend import hide_password
from memgraft.collab.bank.errors import BankError
from memgraft.collab.bank.schema import ORIGINAL_VECTOR_THEN, SCHEMA_VERSION, TABLES

LOCK_SPACE = 0x6D67  # first key of the bank's advisory locks ("mg"); the second is the team's hash
SCHEMA_LOCK = 0  # second key of the lock that schema creation and the embedder binding take

TEAM_SETTING = "memgraft.team"
HNSW_INDEX = "memories_hnsw"  # the prefix of each large team's own index (``team_index``); schemas 1-2: one for all
ROW_TABLES = ("groups", "memories", "decisions")

# ``schema.CHANGED_SINCE_SQL``'s rows, each memory's last decision by :as_of found by one aggregate over the log's rows
# of the memories decided on since, then read by its key: PostgreSQL ran SQLite's sorted subquery per memory as a
# scan of the team's log per row and hashed the whole log for the join (an ~800 team: 0.8 ms against 0.3 ms this
# way; 20,000: 13.8 against 9.0 ms). A window over the same rows was as fast on small teams, but was planned as a
# nested loop over both sides (20,000: 50 ms).
CHANGED_SINCE_SQL = """
SELECT m.memory_id, m.team, m.group_id, m.type, m.author, m.original, COALESCE(d.after, m.original),
       m.time, d.relation, d.action, COALESCE(d.valid_after, 1), COALESCE(d.decided_at, m.time), m.rowid,
       m.maintained, """ + ORIGINAL_VECTOR_THEN + """
FROM (SELECT memory_id, (ARRAY_AGG(seq ORDER BY decided_at DESC, seq DESC)
                         FILTER (WHERE decided_at <= :as_of))[1] AS last
      FROM decisions WHERE team = :team AND memory_id IN (
          SELECT memory_id FROM decisions WHERE team = :team AND decided_at > :as_of)
      GROUP BY memory_id) c
JOIN memories m ON m.team = :team AND m.memory_id = c.memory_id
LEFT JOIN decisions d ON d.seq = c.last
WHERE {time} <= :as_of"""

FORGET_SETTING = "memgraft.forget"  # 'on' in one transaction: the triggers let it DELETE (``forget``), never TRUNCATE
# Schema 3 (``migrate``): a DELETE in a transaction that set FORGET_SETTING passes; anything else is refused.
REFUSE = f"""CREATE OR REPLACE FUNCTION memgraft_refuse() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN IF TG_OP = 'DELETE' AND current_setting('{FORGET_SETTING}', true) = 'on' THEN RETURN NULL; END IF;
    RAISE EXCEPTION '%', TG_ARGV[0]; END $$;
"""
COUNT = """CREATE OR REPLACE FUNCTION memgraft_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    UPDATE teams t SET memories = t.memories + n.c FROM (SELECT team, COUNT(*) AS c FROM new_rows GROUP BY team) n
    WHERE t.team = n.team; RETURN NULL; END $$;
CREATE OR REPLACE TRIGGER memories_counted AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memgraft_count();
"""
SCHEMA = TABLES.format(team_count=", memories BIGINT NOT NULL DEFAULT 0",  # kept by memories_counted
                       rowid="\n    rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,",  # SQLite's rowid: write order
                       vector="vector", seq="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY") + """
{refuse}CREATE TRIGGER decisions_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON decisions
    FOR EACH STATEMENT EXECUTE FUNCTION memgraft_refuse('decisions are append-only');
CREATE TRIGGER memories_no_delete BEFORE DELETE OR TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION memgraft_refuse('memories are never deleted');
CREATE TRIGGER memories_keep_original BEFORE UPDATE OF team, memory_id, group_id, type, author, original, time
    ON memories FOR EACH STATEMENT
    EXECUTE FUNCTION memgraft_refuse('a memory''s original text and provenance never change');
{count}CREATE TRIGGER groups_no_delete BEFORE DELETE OR TRUNCATE ON groups
    FOR EACH STATEMENT EXECUTE FUNCTION memgraft_refuse('applied groups are never forgotten');
""".replace("{refuse}", REFUSE).replace("{count}", COUNT) + "".join(f"""
ALTER TABLE {t} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {t} FORCE ROW LEVEL SECURITY;
CREATE POLICY one_team ON {t} USING (team = current_setting('{TEAM_SETTING}', true))
    WITH CHECK (team = current_setting('{TEAM_SETTING}', true));""" for t in ROW_TABLES)
# A group's whole write (schema 4; ``pg_apply`` calls it): the team bound and its writers' lock taken, then the
# checks of ``MemoryBank.group_transaction`` in its order, each refusal a code of its own, then the writes in write
# order and the version bump; one statement, so one transaction in autocommit.
# Codes of the function's refusals (SQLSTATE class "MG", which PostgreSQL leaves to applications).
APPLIED, OUT_OF_ORDER, CLASH, STALE, MISSING = "MG001", "MG002", "MG003", "MG004", "MG005"

APPLY_GROUP = f"""CREATE OR REPLACE FUNCTION memgraft_apply_group(
    p_team text, p_group text, p_time text, p_applied_at text,
    m_ids text[], m_types text[], m_authors text[], m_contents text[], m_vecs vector[],
    d_ids text[], d_memory text[], d_level text[], d_relation text[], d_action text[], d_before text[],
    d_after text[], d_valid_before int[], d_valid_after int[], d_by text[], d_reason text[], d_vecs vector[])
RETURNS TABLE (new_version bigint, team_memories bigint, target_types text[], target_times text[])
LANGUAGE plpgsql AS $$
DECLARE
    last_time text; clash text[]; t_type text; t_time text; types text[] := '{{}}'; times text[] := '{{}}';
BEGIN
    PERFORM set_config('{TEAM_SETTING}', p_team, true), pg_advisory_xact_lock({LOCK_SPACE}, hashtext(p_team));
    IF EXISTS (SELECT 1 FROM groups g WHERE g.team = p_team AND g.group_id = p_group) THEN
        RAISE EXCEPTION USING ERRCODE = '{APPLIED}', MESSAGE = 'group already applied';
    END IF;
    SELECT MAX(g.time) INTO last_time FROM groups g WHERE g.team = p_team;
    IF last_time IS NOT NULL AND p_time < last_time THEN
        RAISE EXCEPTION USING ERRCODE = '{OUT_OF_ORDER}', MESSAGE = last_time;
    END IF;
    SELECT array_agg(m.memory_id ORDER BY m.memory_id) INTO clash FROM memories m
        WHERE m.team = p_team AND m.memory_id = ANY(m_ids);
    IF clash IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '{CLASH}', MESSAGE = array_to_json(clash)::text;
    END IF;
    INSERT INTO teams (team, version) VALUES (p_team, 0) ON CONFLICT DO NOTHING;
    INSERT INTO groups VALUES (p_team, p_group, p_time, p_applied_at);
    INSERT INTO memories (team, memory_id, group_id, type, author, original, maintained, time, relation, action,
                          valid, maintained_at, embedding, original_embedding)
        SELECT p_team, u.id, p_group, u.kind, u.author, u.content, u.content, p_time, NULL, NULL, 1, p_time,
               u.vec, u.vec
        FROM unnest(m_ids, m_types, m_authors, m_contents, m_vecs) WITH ORDINALITY
             AS u(id, kind, author, content, vec, n)
        ORDER BY u.n;
    FOR i IN 1 .. coalesce(array_length(d_ids, 1), 0) LOOP
        UPDATE memories m SET maintained = d_after[i], relation = d_relation[i], action = d_action[i],
                              valid = d_valid_after[i], maintained_at = p_time,
                              embedding = COALESCE(d_vecs[i], m.embedding)
            WHERE m.team = p_team AND m.memory_id = d_memory[i] AND m.maintained = d_before[i]
              AND m.valid = d_valid_before[i]
            RETURNING m.type, m.time INTO t_type, t_time;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING MESSAGE = i::text, ERRCODE = CASE WHEN EXISTS (
                SELECT 1 FROM memories m WHERE m.team = p_team AND m.memory_id = d_memory[i])
                THEN '{STALE}' ELSE '{MISSING}' END;
        END IF;
        types := types || t_type;
        times := times || t_time;
    END LOOP;
    INSERT INTO decisions (decision_id, team, memory_id, group_id, decided_at, level, relation, action, before,
                           after, valid_before, valid_after, decided_by, reason)
        SELECT u.id, p_team, u.mem, p_group, p_time, u.lvl, u.rel, u.act, u.bef, u.aft, u.vb, u.va, u.dby, u.why
        FROM unnest(d_ids, d_memory, d_level, d_relation, d_action, d_before, d_after, d_valid_before,
                    d_valid_after, d_by, d_reason) WITH ORDINALITY
             AS u(id, mem, lvl, rel, act, bef, aft, vb, va, dby, why, n)
        ORDER BY u.n;
    RETURN QUERY UPDATE teams t SET version = t.version + 1 WHERE t.team = p_team
        RETURNING t.version::bigint, t.memories::bigint, types, times;
END $$;
"""

SCHEMA += "\n" + APPLY_GROUP  # schema 4: a group's checks and writes in one statement (``pg_apply``)


def team_index(team: str) -> str:
    """The name of ``team``'s own HNSW index (a hash: any team name, within PostgreSQL's 63 characters)."""
    return f"{HNSW_INDEX}_{hashlib.sha1(team.encode()).hexdigest()[:20]}"


def team_literal(team: str) -> str:
    """``team`` as an SQL string literal (standard_conforming_strings, PostgreSQL's default since 9.1)."""
    return "'" + team.replace("'", "''") + "'"


# Read from pg_class with this statement's snapshot: ``to_regclass`` answers from the session's catalog cache,
# which may not yet show tables another process committed while we waited for the lock.
HAS_SCHEMA = ("SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
              "ON n.oid = c.relnamespace WHERE c.relname = 'meta' AND n.nspname = current_schema())")


def check_role(conn: Any, where: str) -> None:
    row = conn.execute("SELECT rolname, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user").fetchone()
    if row[1]:
        raise BankError(f"{where} connects as {row[0]!r}, a role that bypasses row-level security, so "
                        f"teams would not be kept apart: connect as an ordinary role (no SUPERUSER, no "
                        f"BYPASSRLS) that owns the bank's tables")


def ensure_vector(conn: Any, where: str) -> None:
    import psycopg

    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        with conn.transaction():  # under the schema lock: concurrent CREATE EXTENSIONs collide
            conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, SCHEMA_LOCK))
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as err:
        raise BankError(f"{where} lacks the pgvector extension and this role cannot add it ({err}); "
                        f"a superuser must run CREATE EXTENSION vector in that database") from None


def create_schema_on(conn: Any) -> None:
    """Create the tables once, in the caller's tx (under the schema lock: two processes may open a new bank at
    once)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, SCHEMA_LOCK))
    if not conn.execute(HAS_SCHEMA).fetchone()[0]:
        conn.execute(SCHEMA)
        conn.execute("INSERT INTO meta VALUES ('schema_version', %s)", (SCHEMA_VERSION,))


def fresh_schema(url: str, schema: str) -> str:
    """A new, empty bank in its own schema of the database at ``url`` (dropped first if it exists), as a URL
    whose connections find the bank's tables there: several banks of one stream (the eval's raw, judge and
    rules banks, whose team names are the same) then share one database without sharing rows."""
    import psycopg
    from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise BankError(f"schema name {schema!r}: lower-case letters, digits and '_' only")
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            if not conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
    except psycopg.Error as err:
        raise BankError(f"{hide_password(url)}: cannot make schema {schema!r}: {str(err).strip()}") from None
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-c search_path={schema},public"))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


@lru_cache(maxsize=512)
def to_psycopg(sql: str) -> str:
    """SQLite placeholders (``?``, ``:name``) as psycopg's (``%s``, ``%(name)s``); a literal ``%`` doubled."""
    sql = sql.replace("%", "%%").replace("?", "%s")
    return re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", sql)


def upgrade_to_3(db: Any, teams: list[str], exact_max_rows: int) -> None:
    """Schema 3 on ``db`` (a ``PostgresBackend``), in its tx under the schema lock: the team sizes the first schema
    lacked, counted again team by team (row-level security), the triggers that allow ``forget``, and no
    whole-table HNSW index while every team is ranked exactly (the first schema built one for every bank); a team
    past ``exact_max_rows`` gets its own."""
    db.execute("ALTER TABLE teams ADD COLUMN IF NOT EXISTS memories BIGINT NOT NULL DEFAULT 0")
    db.execute(REFUSE)
    for statement in COUNT.split(";\n")[:2]:
        db.execute(statement)
    db.execute(f"DROP INDEX IF EXISTS {HNSW_INDEX}")  # the whole-table index: one per large team now
    for team in teams:
        db.use_team(team)
        n = db.execute("SELECT COUNT(*) FROM memories WHERE team = ?", (team,)).fetchone()[0]
        db.execute("UPDATE teams SET memories = ? WHERE team = ?", (n, team))
        if n > exact_max_rows:
            db._build_index(team)


def upgrade_to_4(db: Any) -> None:
    """Schema 4 on ``db`` (a ``PostgresBackend``), in its tx under the schema lock: ``memgraft_apply_group``."""
    db.execute_untied(APPLY_GROUP)
