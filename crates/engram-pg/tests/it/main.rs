//! engram-pg's integration tests: the conformance suite against a real PostgreSQL with
//! pgvector, directly and through PgBouncer in transaction pooling mode, plus
//! PostgreSQL-specific checks. `cargo xtask test` starts the server and PgBouncer and sets
//! `ENGRAM_TEST_DATABASE_URL` and `ENGRAM_TEST_PGBOUNCER_URL`; every test gets a fresh database
//! cloned from a migrated template.

mod postgres;
mod search;

engram_domain::memory_store_test_suite!(engram_pg::testing::fresh_store);

/// The whole suite again with every call's transaction through PgBouncer: each transaction may
/// get another server connection, no session setting or prepared statement carries over.
mod through_pgbouncer {
    engram_domain::memory_store_test_suite!(engram_pg::testing::fresh_pooled_store);
}
