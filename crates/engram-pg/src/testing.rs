//! Test support (feature `testing`): a fresh, migrated database per test, cloned from a
//! template database on the server named by `ENGRAM_TEST_DATABASE_URL`. Panics on failure,
//! as tests want.

#![allow(clippy::missing_panics_doc)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::PgStore;
use engram_domain::MemoryStore;
use tokio_postgres::NoTls;

const TEMPLATE: &str = "engram_template";
/// Serialises template (re)builds across the test processes of one run.
const TEMPLATE_LOCK: i64 = 0x7465_6d70_6c61;

/// The server's URL from `ENGRAM_TEST_DATABASE_URL`.
pub fn server_url() -> String {
    std::env::var("ENGRAM_TEST_DATABASE_URL").expect(
        "ENGRAM_TEST_DATABASE_URL is not set: run the tests with `cargo xtask test`, \
         which starts a private PostgreSQL with pgvector, or point it at a server of yours",
    )
}

/// `url` with its database replaced by `database`.
pub fn with_database(url: &str, database: &str) -> String {
    let mut config: tokio_postgres::Config = url.parse().expect("ENGRAM_TEST_DATABASE_URL parses");
    config.dbname(database);
    // Rebuild as a key=value string, which tokio-postgres parses like a URL.
    let mut parts = vec![format!("dbname={database}")];
    if let Some(user) = config.get_user() {
        parts.push(format!("user={user}"));
    }
    if let Some(password) = config.get_password() {
        parts.push(format!("password={}", String::from_utf8_lossy(password)));
    }
    for host in config.get_hosts() {
        if let tokio_postgres::config::Host::Tcp(host) = host {
            parts.push(format!("host={host}"));
        }
    }
    if let Some(port) = config.get_ports().first() {
        parts.push(format!("port={port}"));
    }
    parts.join(" ")
}

async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&server_url(), NoTls)
        .await
        .expect("connect to ENGRAM_TEST_DATABASE_URL");
    tokio::spawn(connection);
    client
}

/// Makes sure `engram_template` holds the current schema; rebuilds it when the migrations
/// changed (its comment records the fingerprint it was built from).
async fn ensure_template(admin: &tokio_postgres::Client) {
    let fingerprint = PgStore::schema_fingerprint();
    admin
        .execute("SELECT pg_advisory_lock($1)", &[&TEMPLATE_LOCK])
        .await
        .unwrap();
    let current: Option<String> = admin
        .query_opt(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1",
            &[&TEMPLATE],
        )
        .await
        .unwrap()
        .and_then(|row| row.get(0));
    if current.as_deref() != Some(fingerprint.as_str()) {
        for statement in [
            format!("DROP DATABASE IF EXISTS {TEMPLATE} WITH (FORCE)"),
            format!("CREATE DATABASE {TEMPLATE}"),
        ] {
            admin.batch_execute(&statement).await.unwrap();
        }
        let store = PgStore::connect_with(&with_database(&server_url(), TEMPLATE), 1)
            .await
            .unwrap();
        store.migrate().await.unwrap();
        drop(store);
        wait_until_unused(admin, TEMPLATE).await;
        admin
            .batch_execute(&format!(
                "COMMENT ON DATABASE {TEMPLATE} IS '{fingerprint}'"
            ))
            .await
            .unwrap();
    }
    admin
        .execute("SELECT pg_advisory_unlock($1)", &[&TEMPLATE_LOCK])
        .await
        .unwrap();
}

async fn wait_until_unused(admin: &tokio_postgres::Client, database: &str) {
    for _ in 0..500 {
        let row = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = $1",
                &[&database],
            )
            .await
            .unwrap();
        if row.get::<_, i64>(0) == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("connections to {database} did not close");
}

/// A new empty database (no schema, no extension), as a user's freshly created one: for
/// tests of what engram does on first contact.
pub async fn empty_database() -> String {
    create_database(&admin().await, "template0").await
}

/// A database of its own for one test, migrated, and a store on it.
pub async fn fresh_database() -> String {
    let admin = admin().await;
    ensure_template(&admin).await;
    create_database(&admin, TEMPLATE).await
}

/// A new database copied from `template`, its URL. The databases are named
/// `engram_test_*`, which is what `cargo xtask test` counts.
async fn create_database(admin: &tokio_postgres::Client, template: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let name = format!(
        "engram_test_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    admin
        .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
        .await
        .unwrap();
    with_database(&server_url(), &name)
}

/// A store on a fresh database, as the conformance suite wants it.
pub async fn fresh_store() -> Arc<dyn MemoryStore> {
    let url = fresh_database().await;
    Arc::new(
        PgStore::connect(&url)
            .await
            .expect("connect to the test database"),
    )
}

/// PgBouncer's URL from `ENGRAM_TEST_PGBOUNCER_URL`: transaction pooling in front of the test
/// server, every database of it reachable by name.
pub fn pgbouncer_url() -> String {
    std::env::var("ENGRAM_TEST_PGBOUNCER_URL").expect(
        "ENGRAM_TEST_PGBOUNCER_URL is not set: run the tests with `cargo xtask test`, which \
         starts PgBouncer (transaction pooling) in front of its PostgreSQL, or point it at a \
         PgBouncer of yours in front of ENGRAM_TEST_DATABASE_URL's server",
    )
}

/// A store on a fresh database reached through PgBouncer in transaction pooling mode, the
/// direct URL given for migrations, as the conformance suite wants it.
pub async fn fresh_pooled_store() -> Arc<dyn MemoryStore> {
    let direct = fresh_database().await;
    let config: tokio_postgres::Config = direct.parse().expect("a test database URL");
    let database = config.get_dbname().expect("a test database's name");
    let options = crate::PgOptions {
        direct_url: Some(direct.clone()),
        ..crate::PgOptions::default()
    };
    let store = PgStore::open(&with_database(&pgbouncer_url(), database), &options)
        .await
        .expect("connect to the test database through PgBouncer");
    Arc::new(store)
}
