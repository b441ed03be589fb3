"""The history store: every bake-off's runs, candidates, verdicts, timings and environment in one
SQL database (SQLAlchemy): a SQLite file under the runs root by default, PostgreSQL in service
mode. `tasks.store.history` writes and reads it; `tasks.store.schema` holds the tables."""
