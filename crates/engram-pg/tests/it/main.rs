//! engram-pg's integration tests: the conformance suite against a real PostgreSQL with
//! pgvector, plus PostgreSQL-specific checks. `cargo xtask test` starts the server and sets
//! `ENGRAM_TEST_DATABASE_URL`; every test gets a fresh database cloned from a migrated template.

mod postgres;
mod search;

engram_domain::memory_store_test_suite!(engram_pg::testing::fresh_store);
