"""The history store: every bake-off's runs, candidates, verdicts, timings and environment in one
SQL database (SQLAlchemy): a SQLite file under the runs root by default, PostgreSQL in service
mode. `tasks.history.records` writes and reads it; `tasks.history.schema` holds the tables."""
