"""Tables of the history store, and the engine for a database URL.

Several lanes, bake-offs and hosts write at once. PostgreSQL takes that as it is. SQLite does
too with three settings made on every connection: write-ahead logging (readers never block the
writer), a busy timeout (a writer waits for the lock instead of failing), and transactions that
take the write lock when they begin (BEGIN IMMEDIATE), so two writers never deadlock upgrading
a read lock. Tables are created on first use, by whichever writer comes first; a column added
since a store was made is added to it then (`ADDED_COLUMNS`), nullable, so old rows read as None.
"""

from __future__ import annotations

import threading
from datetime import datetime

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    create_engine,
    event,
    inspect,
    text,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DatabaseError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

SQLITE_BUSY_S = 60


class Base(DeclarativeBase):
    pass


class RunRow(Base):
    """One bake-off (kind "bakeoff") or one nightly re-timing of a kernel (kind "retime")."""

    __tablename__ = "bakeoff_runs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kernel: Mapped[str] = mapped_column(String(200), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    mode: Mapped[str] = mapped_column(String(16))
    kernel_path: Mapped[str] = mapped_column(Text)
    run_dir: Mapped[str] = mapped_column(Text)
    task_dir: Mapped[str] = mapped_column(Text)
    oracle_sha256: Mapped[str] = mapped_column(String(64), index=True)
    recorded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    host: Mapped[str] = mapped_column(String(200))
    device: Mapped[str] = mapped_column(String(200))
    arch: Mapped[str] = mapped_column(String(32))
    code_version: Mapped[str] = mapped_column(String(32))
    winner: Mapped[str | None] = mapped_column(String(200), nullable=True)
    winner_speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    fingerprint: Mapped[dict] = mapped_column(JSON)
    environment: Mapped[dict] = mapped_column(JSON)
    lanes: Mapped[list] = mapped_column(JSON)  # key, status, reason, device, lease start/end
    candidates: Mapped[list[CandidateRowDB]] = relationship(
        back_populates="run", cascade="all, delete-orphan", order_by="CandidateRowDB.id"
    )


class CandidateRowDB(Base):
    """A candidate of a run with its ranking status and verdict; the frozen baseline is one too
    (source "frozen", status "frozen-baseline")."""

    __tablename__ = "bakeoff_candidates"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("bakeoff_runs.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    language: Mapped[str] = mapped_column(String(64))
    mode: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(32))
    verdict: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(Text)
    accepted: Mapped[bool] = mapped_column(Boolean, default=False)
    speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    margin: Mapped[float | None] = mapped_column(Float, nullable=True)
    path: Mapped[str] = mapped_column(Text)
    params: Mapped[dict] = mapped_column(JSON)
    env: Mapped[dict] = mapped_column(JSON)
    run: Mapped[RunRow] = relationship(back_populates="candidates")
    timings: Mapped[list[TimingRow]] = relationship(
        back_populates="candidate", cascade="all, delete-orphan", order_by="TimingRow.id"
    )


class TimingRow(Base):
    __tablename__ = "bakeoff_timings"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    candidate_id: Mapped[int] = mapped_column(ForeignKey("bakeoff_candidates.id"), index=True)
    workload: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(32))
    clock: Mapped[str | None] = mapped_column(String(16), nullable=True)
    median_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    spread_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    sample_count: Mapped[int | None] = mapped_column(Integer, nullable=True)
    baseline_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    baseline_spread_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    speedup: Mapped[float | None] = mapped_column(Float, nullable=True)
    candidate: Mapped[CandidateRowDB] = relationship(back_populates="timings")


def _sqlite_settings(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None  # let SQLAlchemy's BEGIN below be the only one
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_S * 1000}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def normalise_url(url: str) -> str:
    """Prefect's own PostgreSQL URL (asyncpg) names the same database for a sync driver."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() != "psycopg2":
        parsed = parsed.set(drivername="postgresql+psycopg2")
    if parsed.get_backend_name() == "sqlite" and parsed.get_driver_name() != "pysqlite":
        parsed = parsed.set(drivername="sqlite")
    return parsed.render_as_string(hide_password=False)


# Columns added after stores were first made: (table, column, SQL type).
ADDED_COLUMNS = [("bakeoff_timings", "baseline_spread_ms", "FLOAT")]


def _add_missing_columns(engine: Engine) -> None:
    for table, column, kind in ADDED_COLUMNS:
        if column not in {c["name"] for c in inspect(engine).get_columns(table)}:
            with engine.begin() as conn:
                conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {kind}"))


_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def engine_for(url: str) -> Engine:
    url = normalise_url(url)
    with _lock:
        if url not in _engines:
            sqlite = url.startswith("sqlite")
            engine = create_engine(
                url,
                connect_args={"timeout": SQLITE_BUSY_S} if sqlite else {},
                pool_pre_ping=not sqlite,
            )
            if sqlite:
                _sqlite_settings(engine)
            for attempt in range(5):  # writers racing to create the tables: the loser re-checks
                try:
                    Base.metadata.create_all(engine)
                    _add_missing_columns(engine)
                    break
                except DatabaseError:
                    if attempt == 4:
                        raise
            _engines[url] = engine
        return _engines[url]
