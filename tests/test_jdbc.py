"""JDBC bookmarks, parallel reads and sinks against the real PostgreSQL, MariaDB and SQLite."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa

from sparkmark import SinkError, SourceError, spark_lines
from sparkmark.engine.models import RunState

BACKENDS = {
    "postgresql": (
        "jdbc:postgresql://127.0.0.1:5432/test",
        "postgres",
        "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    ),
    "mariadb": ("jdbc:mysql://127.0.0.1:3306/test", "root", "mysql+pymysql://root@127.0.0.1:3306/test"),
}


class Db:
    """One test database: a JDBC URL for the job and an engine to set up tables."""

    def __init__(self, kind: str, tmp_path):
        self.kind = kind
        if kind == "sqlite":
            path = tmp_path / "source.db"
            self.url, self.user = f"jdbc:sqlite:{path}", None
            self.engine = sa.create_engine(f"sqlite:///{path}")
        else:
            self.url, self.user, sa_url = BACKENDS[kind]
            self.engine = sa.create_engine(sa_url)
        self.tables: list[sa.Table] = []
        self.metadata = sa.MetaData()

    def table(self, *columns, name: str | None = None) -> sa.Table:
        t = sa.Table(name or f"t_{uuid.uuid4().hex[:8]}", self.metadata, *columns)
        t.create(self.engine)
        self.tables.append(t)
        return t

    def insert(self, table: sa.Table, rows: list[dict]) -> None:
        with self.engine.begin() as conn:
            conn.execute(table.insert(), rows)

    def drop(self) -> None:
        for t in reversed(self.tables):
            t.drop(self.engine, checkfirst=True)
        self.engine.dispose()


@pytest.fixture(params=["postgresql", "mariadb", "sqlite"])
def db(request, tmp_path):
    d = Db(request.param, tmp_path)
    yield d
    d.drop()


@pytest.fixture(params=["postgresql", "mariadb"])
def server_db(request, tmp_path):
    d = Db(request.param, tmp_path)
    yield d
    d.drop()


@pytest.fixture
def pg(tmp_path):
    d = Db("postgresql", tmp_path)
    yield d
    d.drop()


def orders(db: Db, name: str | None = None) -> sa.Table:
    return db.table(
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("amount", sa.Integer),
        name=name,
    )


def read_ids(runner, db: Db, table: str, option="job-bookmark-enable", *extra, ctx="db", column="id", **kw):
    job = runner.start(option, *extra)
    df = job.read_jdbc(db.url, table=table, ctx=ctx, user=db.user, **kw)
    got = sorted((r[column] for r in df.collect()), key=lambda v: (v is not None, v))
    job.commit()
    return got, job


def test_first_run_reads_all_then_only_new_rows(runner, db):
    t = orders(db)
    db.insert(t, [{"id": i, "amount": i * 10} for i in (1, 2, 3)])
    assert read_ids(runner, db, t.name)[0] == [1, 2, 3]
    assert read_ids(runner, db, t.name)[0] == []
    db.insert(t, [{"id": 4, "amount": 1}, {"id": 5, "amount": 1}])
    got, job = read_ids(runner, db, t.name)
    assert got == [4, 5]
    state = runner.store.latest_version(runner.name).ctx_states["db"]
    assert state["type"] == "jdbc" and state["keys"] == ["id"] and state["last_value"] == [5]
    assert state["keys_are_primary_key"] is True  # later runs reuse it without a catalogue lookup
    metrics = runner.store.get_run(job.run_id).metrics["sources"]["db"]
    assert metrics["rows_read"] == 2 and metrics["key_range"] == {"after": [3], "up_to": [5]}
    db.insert(t, [{"id": 6, "amount": 1}])
    assert read_ids(runner, db, t.name)[0] == [6]


def test_rows_inserted_during_a_run_wait_for_the_next(runner, pg):
    t = orders(pg)
    pg.insert(t, [{"id": 1, "amount": 1}, {"id": 2, "amount": 1}])
    job = runner.start()
    df = job.read_jdbc(pg.url, table=t.name, ctx="db", user=pg.user)
    pg.insert(t, [{"id": 3, "amount": 1}])  # arrives after the run fixed its upper bound
    assert sorted(r["id"] for r in df.collect()) == [1, 2]
    job.commit()
    assert read_ids(runner, pg, t.name)[0] == [3]


def test_composite_key_is_lexicographic(runner, db):
    t = db.table(
        sa.Column("day", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    )
    db.insert(t, [{"day": 1, "seq": 1}, {"day": 1, "seq": 2}, {"day": 2, "seq": 1}])
    assert len(read_ids(runner, db, t.name, column="day")[0]) == 3
    db.insert(t, [{"day": 2, "seq": 2}, {"day": 3, "seq": 0}, {"day": 1, "seq": 0}])
    job = runner.start()
    rows = job.read_jdbc(db.url, table=t.name, ctx="db", user=db.user).collect()
    job.commit()
    # (1, 0) sorts before the committed (2, 1): a composite bookmark does not see it, as on Glue.
    assert sorted((r["day"], r["seq"]) for r in rows) == [(2, 2), (3, 0)]


def test_desc_order_reads_downward(runner, db):
    t = orders(db)
    db.insert(t, [{"id": i, "amount": 0} for i in (100, 90, 80)])
    assert read_ids(runner, db, t.name, keys=["id"], keys_sort_order="desc")[0] == [80, 90, 100]
    db.insert(t, [{"id": 70, "amount": 0}, {"id": 95, "amount": 0}])
    got, _ = read_ids(runner, db, t.name, keys=["id"], keys_sort_order="desc")
    assert got == [70]  # 95 lies above the committed minimum
    state = runner.store.latest_version(runner.name).ctx_states["db"]
    assert state["keys_sort_order"] == "desc" and state["last_value"] == [70]


def test_keys_with_gaps(runner, db):
    t = orders(db)
    db.insert(t, [{"id": i, "amount": 0} for i in (1, 1000, 50_000)])
    assert read_ids(runner, db, t.name)[0] == [1, 1000, 50_000]
    db.insert(t, [{"id": 10_000_000, "amount": 0}])
    assert read_ids(runner, db, t.name)[0] == [10_000_000]


def test_lag_rereads_late_and_updated_rows_without_duplicates(runner, pg):
    t = pg.table(
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("updated_at", sa.DateTime),
        sa.Column("v", sa.Integer),
    )
    base = datetime(2026, 1, 1, 12, 0, 0)
    pg.insert(
        t,
        [
            {"id": 1, "updated_at": base, "v": 1},
            {"id": 2, "updated_at": base + timedelta(seconds=50), "v": 1},
        ],
    )
    kw = {"keys": ["updated_at"], "lag": 60}
    assert read_ids(runner, pg, t.name, **kw)[0] == [1, 2]
    # A late row committed with an older timestamp, inside the lag window, and an update.
    pg.insert(t, [{"id": 3, "updated_at": base + timedelta(seconds=30), "v": 1}])
    with pg.engine.begin() as conn:
        conn.execute(t.update().where(t.c.id == 1).values(updated_at=base + timedelta(seconds=70), v=2))
    got, job = read_ids(runner, pg, t.name, **kw)
    assert got == [1, 3]  # row 2 was in the window but already processed: dropped by key
    metrics = runner.store.get_run(job.run_id).metrics["sources"]["db"]
    assert metrics["rows_dropped_as_processed"] == 1
    assert read_ids(runner, pg, t.name, **kw)[0] == []


@pytest.mark.parametrize("policy,expected", [("exclude", [1, 2]), ("include", [None, 1, 2])])
def test_null_key_policies(runner, db, policy, expected):
    t = db.table(
        sa.Column("pk", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("seq", sa.Integer, nullable=True),
    )
    db.insert(t, [{"pk": 1, "seq": 1}, {"pk": 2, "seq": 2}, {"pk": 3, "seq": None}])
    got, job = read_ids(runner, db, t.name, keys=["seq"], on_null_key=policy, column="seq")
    assert sorted(got, key=lambda v: (v is not None, v)) == expected
    assert runner.store.get_run(job.run_id).metrics["sources"]["db"]["null_key_rows"] == 1


def test_null_keys_raise_by_default(runner, db):
    t = db.table(
        sa.Column("pk", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("seq", sa.Integer, nullable=True),
    )
    db.insert(t, [{"pk": 1, "seq": None}])
    job = runner.start()
    with pytest.raises(SourceError, match="1 row.*NULL bookmark key"):
        job.read_jdbc(db.url, table=t.name, ctx="db", user=db.user, keys=["seq"])
    job.fail("null keys")


def test_numeric_key_reads_in_range_partitions(runner, server_db):
    t = orders(server_db)
    server_db.insert(t, [{"id": i, "amount": i} for i in range(1, 101)])
    job = runner.start()
    df = job.read_jdbc(server_db.url, table=t.name, ctx="db", user=server_db.user, hashpartitions=4)
    assert df.rdd.getNumPartitions() == 4
    assert sorted(r["id"] for r in df.collect()) == list(range(1, 101))
    job.commit()
    assert runner.store.get_run(job.run_id).metrics["sources"]["db"]["partitioning"] == "range(id)"


@pytest.mark.parametrize("how", ["hashfield", "hashexpression"])
def test_hash_partitions_cover_every_row_once(runner, server_db, how):
    t = server_db.table(
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("code", sa.String(20), nullable=True),
    )
    rows = [{"id": i, "code": None if i % 10 == 0 else f"c{i}"} for i in range(1, 61)]
    server_db.insert(t, rows)
    option = {"hashfield": "code"} if how == "hashfield" else {"hashexpression": "id * 7 - 200"}
    job = runner.start()
    df = job.read_jdbc(server_db.url, table=t.name, ctx="db", user=server_db.user, hashpartitions=5, **option)
    assert df.rdd.getNumPartitions() == 5
    assert sorted(r["id"] for r in df.collect()) == list(range(1, 61))  # NULLs and negatives too
    job.commit()


def test_sqlite_hashfield_needs_an_expression(runner, tmp_path):
    db = Db("sqlite", tmp_path)
    t = orders(db)
    db.insert(t, [{"id": 1, "amount": 1}])
    job = runner.start()
    with pytest.raises(SourceError, match="SQLite has no hash function"):
        job.read_jdbc(db.url, table=t.name, ctx="db", hashfield="amount")
    df = job.read_jdbc(db.url, table=t.name, ctx="db2", hashexpression="id", hashpartitions=3)
    assert [r["id"] for r in df.collect()] == [1]
    job.commit()
    db.drop()


def test_failure_commits_nothing(runner, db):
    t = orders(db)
    db.insert(t, [{"id": 1, "amount": 1}])
    job = runner.start()
    with pytest.raises(RuntimeError), job:
        job.read_jdbc(db.url, table=t.name, ctx="db", user=db.user).collect()
        raise RuntimeError("transform failed")
    assert runner.store.get_run(job.run_id).state is RunState.FAILED
    assert read_ids(runner, db, t.name)[0] == [1]


def test_upsert_and_append_without_duplicates(runner, db, spark):
    target = db.table(
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False), sa.Column("amount", sa.Integer)
    )
    db.insert(target, [{"id": 1, "amount": 10}])
    with db.engine.connect() as conn:  # other tests' runs may be staging in this database
        before = {n for n in sa.inspect(conn).get_table_names() if n.startswith("sm_stage_")}
    job = runner.start()
    df = spark.createDataFrame([(1, 11), (2, 20)], "id INT, amount INT")
    result = job.write_jdbc(df, db.url, table=target.name, mode="upsert", user=db.user)
    assert result["rows_written"] == 2
    job.write_jdbc(
        spark.createDataFrame([(2, 21), (3, 30)], "id INT, amount INT"),
        db.url,
        table=target.name,
        mode="upsert",
        keys=["id"],
        user=db.user,
    )
    job.commit()
    with db.engine.connect() as conn:
        rows = sorted(tuple(r) for r in conn.execute(sa.select(target.c.id, target.c.amount)))
        stages = {n for n in sa.inspect(conn).get_table_names() if n.startswith("sm_stage_")}
    assert rows == [(1, 11), (2, 21), (3, 30)]
    assert stages - before == set()
    assert runner.store.get_run(job.run_id).metrics["sinks"][0]["mode"] == "upsert"


def test_failed_write_leaves_the_target_as_it_was(runner, db, spark):
    target = db.table(
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False), sa.Column("amount", sa.Integer)
    )
    db.insert(target, [{"id": 1, "amount": 10}])
    job = runner.start()
    # Appending a key that exists violates the primary key inside the merge transaction.
    with pytest.raises(SinkError, match="left as it was"):
        job.write_jdbc(
            spark.createDataFrame([(5, 50), (1, 99)], "id INT, amount INT"),
            db.url,
            table=target.name,
            mode="append",
            user=db.user,
        )
    with pytest.raises(SinkError, match="more than once"):
        job.write_jdbc(
            spark.createDataFrame([(7, 1), (7, 2)], "id INT, amount INT"),
            db.url,
            table=target.name,
            mode="upsert",
            user=db.user,
        )
    job.fail("write failed")
    with db.engine.connect() as conn:
        assert [tuple(r) for r in conn.execute(sa.select(target.c.id, target.c.amount))] == [(1, 10)]


def test_overwrite_and_append_create_missing_table(runner, db, spark):
    name = f"t_{uuid.uuid4().hex[:8]}"
    job = runner.start()
    job.write_jdbc(
        spark.createDataFrame([(1, "a")], "id INT, s STRING"), db.url, table=name, mode="append", user=db.user
    )
    job.write_jdbc(
        spark.createDataFrame([(2, "b"), (3, "c")], "id INT, s STRING"),
        db.url,
        table=name,
        mode="overwrite",
        user=db.user,
    )
    job.commit()
    table = sa.Table(name, sa.MetaData(), autoload_with=db.engine)
    db.tables.append(table)
    with db.engine.connect() as conn:
        assert sorted(r[0] for r in conn.execute(sa.select(table.c.id))) == [2, 3]


def test_injection_in_table_names_keys_and_values(runner, db):
    victim = orders(db)
    db.insert(victim, [{"id": 1, "amount": 1}])
    hostile = f'x_{uuid.uuid4().hex[:6]}"; DROP TABLE {victim.name}; --'
    t = db.table(
        sa.Column("k'ey\" x", sa.String(60), primary_key=True), sa.Column("v", sa.Integer), name=hostile
    )
    values = ["a", "b'; DELETE FROM x; --", "c\\'\"`", "50% :off %s"]
    db.insert(t, [{"k'ey\" x": v, "v": i} for i, v in enumerate(values)])
    if not spark_lines.HAS_VARIANT:  # Spark 3.5 would put the key's quote into its SQL unescaped
        with pytest.raises(SourceError, match="holds a quote character, which Spark 3.5"):
            read_ids(runner, db, hostile, column="v")
        with db.engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(victim)).scalar() == 1
        return
    got, _ = read_ids(runner, db, hostile, column="v")
    assert got == [0, 1, 2, 3]
    db.insert(t, [{"k'ey\" x": "e' OR '1'='1", "v": 4}])
    assert read_ids(runner, db, hostile, column="v")[0] == [4]
    with db.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(victim)).scalar() == 1


def test_table_without_primary_key_needs_keys(runner, db):
    t = db.table(sa.Column("n", sa.Integer))
    db.insert(t, [{"n": 1}])
    job = runner.start()
    with pytest.raises(SourceError, match="has no primary key: pass keys"):
        job.read_jdbc(db.url, table=t.name, ctx="db", user=db.user)
    assert [
        r["n"] for r in job.read_jdbc(db.url, table=t.name, ctx="db2", user=db.user, keys=["n"]).collect()
    ] == [1]
    job.commit()


def test_query_source_with_keys(runner, pg):
    t = orders(pg)
    pg.insert(t, [{"id": i, "amount": i} for i in (1, 2, 3)])
    job = runner.start()
    df = job.read_jdbc(
        pg.url,
        query=f"SELECT id, amount * 2 AS doubled FROM {t.name} WHERE id > 1",
        ctx="q",
        user=pg.user,
        keys=["id"],
    )
    assert sorted(r["doubled"] for r in df.collect()) == [4, 6]
    job.commit()
    state = runner.store.latest_version(runner.name).ctx_states["q"]
    assert "query_sha256" in state and "SELECT" not in json.dumps(state)


def test_pause_range_and_keys_change_guard(runner, pg):
    t = orders(pg)
    pg.insert(t, [{"id": 1, "amount": 0}])
    _, run1 = read_ids(runner, pg, t.name)
    pg.insert(t, [{"id": 2, "amount": 0}, {"id": 3, "amount": 0}])
    _, run2 = read_ids(runner, pg, t.name)
    pg.insert(t, [{"id": 4, "amount": 0}])
    got, _ = read_ids(
        runner,
        pg,
        t.name,
        "job-bookmark-pause",
        "--job-bookmark-from",
        run1.run_id,
        "--job-bookmark-to",
        run2.run_id,
    )
    assert got == [2, 3]
    job = runner.start()
    with pytest.raises(SourceError, match="Reset the bookmark to change the keys"):
        job.read_jdbc(pg.url, table=t.name, ctx="db", user=pg.user, keys=["amount"])
    job.fail("keys changed")


def test_password_from_named_connection_never_stored(runner, server_db, tmp_path, monkeypatch, caplog):
    secret = "not-the-real-one-xyz"
    user = server_db.user
    if server_db.kind == "mariadb":  # MariaDB checks passwords: a user that has this one
        user = "sm_test_user"
        with server_db.engine.begin() as conn:
            conn.exec_driver_sql(f"CREATE USER IF NOT EXISTS '{user}'@'%%' IDENTIFIED BY '{secret}'")
            conn.exec_driver_sql(f"GRANT ALL ON test.* TO '{user}'@'%%'")
    config = tmp_path / "sparkmark.toml"
    config.write_text(
        f'[connections.src]\nurl = "{server_db.url}"\nuser = "{user}"\npassword_env = "SRC_DB_PASSWORD"\n'
    )
    monkeypatch.setenv("SPARKMARK_CONFIG", str(config))
    monkeypatch.setenv("SRC_DB_PASSWORD", secret)
    t = orders(server_db)
    server_db.insert(t, [{"id": 1, "amount": 1}])
    with caplog.at_level(logging.DEBUG, logger="sparkmark"):
        job = runner.start("job-bookmark-enable", "--db_password", secret)
        got = [r["id"] for r in job.read_jdbc(connection="src", table=t.name, ctx="db").collect()]
        job.commit()
    assert got == [1]
    run = runner.store.get_run(job.run_id)
    stored = json.dumps([run.arguments, run.metrics, runner.store.latest_version(runner.name).ctx_states])
    assert secret not in stored and "****" in stored
    assert secret not in caplog.text
    config.write_text(f'[connections.src]\nurl = "{server_db.url}"\npassword = "oops"\n')
    job = runner.start()
    with pytest.raises(Exception, match="holds a password"):
        job.read_jdbc(connection="src", table=t.name, ctx="db2")
    job.fail("config")


def test_table_names_reach_the_database_as_written(runner, pg):
    """Glue hands dbtable to the database as the user wrote it: an unquoted name is
    folded by PostgreSQL (Account finds account), a name the user quoted keeps its case,
    and anything else is still quoted, never read as SQL."""
    folded, cased = f"account_{uuid.uuid4().hex[:6]}", f"Mixed_{uuid.uuid4().hex[:6]}"
    with pg.engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE {folded} (id int PRIMARY KEY, amount int)")
        conn.exec_driver_sql(f'CREATE TABLE "{cased}" (id int PRIMARY KEY, amount int)')
        conn.exec_driver_sql(f"INSERT INTO {folded} VALUES (1, 10), (2, 20)")
        conn.exec_driver_sql(f'INSERT INTO "{cased}" VALUES (7, 70)')
    try:
        assert read_ids(runner, pg, folded.capitalize(), ctx="folded")[0] == [1, 2]
        assert read_ids(runner, pg, f"public.{folded.upper()}", ctx="schema_folded")[0] == [1, 2]
        assert read_ids(runner, pg, f'"{cased}"', ctx="quoted")[0] == [7]
        with pytest.raises(SourceError, match="does not exist"):
            read_ids(runner, pg, cased, ctx="unquoted")  # PostgreSQL folds it to lower case
    finally:
        with pg.engine.begin() as conn:
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {folded}")
            conn.exec_driver_sql(f'DROP TABLE IF EXISTS "{cased}"')
