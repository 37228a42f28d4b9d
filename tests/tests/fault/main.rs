//! Fault tests, black box: the real `engram` binary (built by the harness), real PostgreSQL
//! (`ENGRAM_TEST_DATABASE_URL`, and a private cluster for the restart) and SQLite, real
//! processes killed with SIGKILL, a fake Ollama switched down and hung, all on loopback and
//! each test bounded in time. Every test prints one line of figures (`fault: …`); run with
//! `--no-capture` (or nextest's `--success-output immediate`) to see them.
//!
//! - `concurrency`: two servers on one store, 8 clients each, 2,000 mixed writes;
//! - `crash`: `kill -9` of the server during a batch load, of `engram import`, and of the
//!   server while it indexes;
//! - `embedder`: the embedder down, then hanging, then back;
//! - `postgres_restart`: PostgreSQL crashed and restarted under load;
//! - `memory`: clients that never read their SSE streams, asking for large answers;
//! - `backup`: a SQLite backup taken under writes, restored;
//! - `drain`: a server stopped with SIGTERM drains while another serves its clients;
//! - `team`: 16 clients through HAProxy, two servers, PgBouncer and a streaming replica, one
//!   server and then the replica stopped.

mod backup;
mod concurrency;
mod crash;
mod drain;
mod embedder;
mod harness;
mod memory;
mod postgres_restart;
mod stall;
mod team;

/// Instantiates each `module::test(backend)` once per store: `postgres::test` and
/// `sqlite::test`.
macro_rules! per_backend {
    ($($module:ident :: $test:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $test() {
                    crate::$module::$test(crate::harness::Backend::Postgres).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $test() {
                    crate::$module::$test(crate::harness::Backend::Sqlite).await;
                }
            )*
        }
    };
}

per_backend!(
    concurrency::two_servers_share_a_store_under_mixed_writes,
    crash::kill_9_during_a_batch_load,
    crash::kill_9_during_import,
    crash::kill_9_during_indexing,
    embedder::the_embedder_down_then_hanging_then_back,
    embedder::refused_texts_in_one_workspace_starve_no_other,
    memory::a_reading_client_gets_every_large_answer,
    drain::a_stopped_server_drains_and_another_serves_its_clients,
    drain::ctrl_c_answers_the_calls_in_flight_and_logs_no_error,
    stall::propose_split_on_a_large_node_stalls_nothing,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_restarted_under_load() {
    postgres_restart::postgres_restarted_under_load().await;
}

/// PgBouncer, a replica and HAProxy are PostgreSQL deployments: PostgreSQL only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_team_cluster_serves_sixteen_clients_through_failures() {
    team::a_team_cluster_serves_sixteen_clients_through_failures().await;
}

/// A replica is a PostgreSQL deployment: PostgreSQL only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_frozen_or_foreign_replica_costs_no_read() {
    team::a_frozen_or_foreign_replica_costs_no_read().await;
}

/// A replica is a PostgreSQL deployment: PostgreSQL only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lagging_replica_is_read_around_then_rested_then_used_again() {
    team::a_lagging_replica_is_read_around_then_rested_then_used_again().await;
}

/// The memory budget does not depend on the store: SQLite only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clients_that_never_read_stay_within_the_memory_budget() {
    memory::clients_that_never_read_stay_within_the_memory_budget(harness::Backend::Sqlite).await;
}

/// The memory budget does not depend on the store: SQLite only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn streamable_clients_that_never_read_stay_within_the_memory_budget() {
    memory::streamable_clients_that_never_read_stay_within_the_memory_budget(
        harness::Backend::Sqlite,
    )
    .await;
}

/// `engram backup` copies SQLite files (PostgreSQL is backed up with pg_dump).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_taken_under_writes_restores_every_acknowledged_write() {
    backup::a_backup_taken_under_writes_restores_every_acknowledged_write().await;
}

/// Reading bodies does not depend on the store: SQLite only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_large_bodies_stay_within_the_memory_bound() {
    memory::parallel_large_bodies_stay_within_the_memory_bound(harness::Backend::Sqlite).await;
}

/// Parsing does not depend on the store: SQLite only.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_body_of_millions_of_items_is_refused_at_the_cost_of_its_bytes() {
    memory::a_body_of_millions_of_items_is_refused_at_the_cost_of_its_bytes(
        harness::Backend::Sqlite,
    )
    .await;
}
