//! Which store serves: PostgreSQL for a `postgres://` URL, SQLite for a file (the default,
//! under the platform's data directory), chosen from `ENGRAM_DATABASE_URL`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use engram_domain::MemoryStore;
use engram_pg::PgStore;
use engram_sqlite::SqliteStore;

/// Where the data lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A PostgreSQL server, `postgres://user:password@host:port/database`.
    Postgres(String),
    /// A SQLite database file.
    Sqlite(PathBuf),
}

impl Location {
    /// Reads `ENGRAM_DATABASE_URL` (or `--database-url`):
    ///
    /// - `postgres://…`, `postgresql://…` or a libpq key-value string (`host=… dbname=…`):
    ///   PostgreSQL;
    /// - `sqlite://PATH`, `sqlite:PATH` or a plain file path: SQLite at `PATH` (`~/` is the
    ///   home directory);
    /// - unset or empty: SQLite at [`default_sqlite_path`].
    ///
    /// Errors: another URL scheme (e.g. `mysql://`), or no home directory to put the default
    /// file in.
    pub fn parse(url: Option<&str>) -> Result<Self> {
        let url = url.map(str::trim).unwrap_or_default();
        if url.is_empty() {
            return Ok(Self::Sqlite(default_sqlite_path()?));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") || is_conninfo(url) {
            return Ok(Self::Postgres(url.to_owned()));
        }
        let path = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .unwrap_or(url);
        if let Some((scheme, _)) = path.split_once("://") {
            bail!(
                "database URL scheme `{scheme}://` is not supported: use postgres://… for \
                 PostgreSQL, or a file path (or sqlite://PATH) for SQLite"
            );
        }
        if path.is_empty() {
            bail!("the SQLite URL `{url}` names no file");
        }
        Ok(Self::Sqlite(expand_home(path)))
    }
}

impl Location {
    /// Whether a PostgreSQL URL carries a password: `user:password@`, `?password=` (or
    /// `&password=`), or a key-value string's `password=`. What `Display` leaves out.
    pub fn holds_password(&self) -> bool {
        let Self::Postgres(url) = self else {
            return false;
        };
        if is_conninfo(url) {
            return url
                .split_whitespace()
                .any(|word| word.starts_with("password="));
        }
        let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
        let (server, query) = rest.split_once('?').unwrap_or((rest, ""));
        let userinfo = server.rsplit_once('@').map(|(userinfo, _)| userinfo);
        userinfo.is_some_and(|userinfo| userinfo.contains(':'))
            || query.split('&').any(|pair| pair.starts_with("password="))
    }
}

impl fmt::Display for Location {
    /// `postgresql host:port/database` (no user or password) or `sqlite /path/engram.db`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Postgres(url) if is_conninfo(url) => {
                let safe: Vec<&str> = url
                    .split_whitespace()
                    .filter(|word| !word.starts_with("password="))
                    .collect();
                write!(f, "postgresql {}", safe.join(" "))
            }
            Self::Postgres(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
                let server = rest.rsplit_once('@').map_or(rest, |(_, s)| s);
                let server = server.split_once('?').map_or(server, |(s, _)| s);
                write!(f, "postgresql {server}")
            }
            Self::Sqlite(path) => write!(f, "sqlite {}", path.display()),
        }
    }
}

/// `engram.db` in engram's data directory: `$XDG_DATA_HOME/engram` or
/// `~/.local/share/engram` on Linux, `~/Library/Application Support/engram` on macOS (the
/// `directories` crate).
///
/// Errors: no home directory.
pub fn default_sqlite_path() -> Result<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "engram")
        .context("no home directory for the default database: set ENGRAM_DATABASE_URL")?;
    Ok(dirs.data_dir().join("engram.db"))
}

/// Whether `url` is a libpq key-value connection string such as `host=db dbname=engram`.
fn is_conninfo(url: &str) -> bool {
    const KEYS: [&str; 6] = [
        "host=",
        "hostaddr=",
        "dbname=",
        "user=",
        "port=",
        "password=",
    ];
    url.split_whitespace()
        .any(|word| KEYS.iter().any(|key| word.starts_with(key)))
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), directories::BaseDirs::new()) {
        (Some(rest), Some(base)) => base.home_dir().join(rest),
        _ => PathBuf::from(path),
    }
}

/// An open store of either kind.
pub enum Store {
    /// PostgreSQL (migrations applied only by [`Store::migrate`]).
    Postgres(PgStore),
    /// SQLite (migrated when opened: the file belongs to this process).
    Sqlite(SqliteStore),
}

impl Store {
    /// The store for a command that only reads: SQLite starts no background build.
    #[must_use]
    pub fn reading_only(self) -> Self {
        match self {
            Self::Sqlite(store) => Self::Sqlite(store.reading_only()),
            other => other,
        }
    }

    /// Connects to (PostgreSQL) or opens, creating it if needed (SQLite), the store at
    /// `location`, with `call_timeout` as each store call's time limit.
    ///
    /// Errors: the server cannot be reached, or the file cannot be created or opened.
    pub async fn open(location: &Location, call_timeout: Duration) -> Result<Self> {
        Self::open_routed(location, call_timeout, &engram_pg::PgOptions::default()).await
    }

    /// As [`Store::open`], PostgreSQL reached as `routes` say (its pooler's direct URL, its
    /// read replica; their `call_timeout` is replaced by this one).
    ///
    /// Errors: as [`Store::open`]; routes beside a SQLite store.
    pub async fn open_routed(
        location: &Location,
        call_timeout: Duration,
        routes: &engram_pg::PgOptions,
    ) -> Result<Self> {
        Ok(match location {
            Location::Postgres(url) => {
                let options = engram_pg::PgOptions {
                    call_timeout,
                    ..routes.clone()
                };
                Self::Postgres(
                    PgStore::open(url, &options)
                        .await
                        .context("connecting to PostgreSQL")?,
                )
            }
            Location::Sqlite(_)
                if routes.direct_url.is_some() || routes.read_replica_url.is_some() =>
            {
                anyhow::bail!(
                    "--database-direct-url and --read-replica-url (ENGRAM_DATABASE_DIRECT_URL, \
                     ENGRAM_READ_REPLICA_URL) apply to PostgreSQL; the store here is a SQLite file"
                )
            }
            Location::Sqlite(path) => Self::Sqlite(
                SqliteStore::open(path)
                    .await
                    .with_context(|| format!("opening the SQLite database {}", path.display()))?
                    .with_call_timeout(call_timeout),
            ),
        })
    }

    /// Applies the migrations the database lacks; returns their names.
    ///
    /// Errors: a migration fails (see each store's `migrate`).
    pub async fn migrate(&self) -> Result<Vec<String>> {
        Ok(match self {
            Self::Postgres(store) => store.migrate().await?,
            Self::Sqlite(store) => store.migrate().await?,
        })
    }

    /// Whether the schema is current.
    ///
    /// Errors: the database cannot be read.
    pub async fn is_migrated(&self) -> Result<bool> {
        Ok(match self {
            Self::Postgres(store) => store.is_migrated().await?,
            Self::Sqlite(store) => store.is_migrated().await?,
        })
    }

    /// `"postgresql"` or `"sqlite"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Postgres(_) => "postgresql",
            Self::Sqlite(_) => "sqlite",
        }
    }

    /// The store behind the trait the rest of engram uses.
    pub fn shared(self) -> Arc<dyn MemoryStore> {
        match self {
            Self::Postgres(store) => Arc::new(store),
            Self::Sqlite(store) => Arc::new(store),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_found_in_every_url_form() {
        let holds = |url: &str| Location::parse(Some(url)).unwrap().holds_password();
        assert!(holds("postgres://me:secret@db.example/engram"));
        assert!(holds(
            "postgres://me@db.example/engram?sslmode=require&password=secret"
        ));
        assert!(holds("host=db dbname=e password=secret"));
        assert!(!holds("postgres://me@db.example/engram?sslmode=require"));
        assert!(!holds("host=db dbname=e user=me"));
        assert!(!holds("/data/e.db"));
    }

    #[test]
    fn urls_choose_the_backend() {
        let pg = "postgres://me:secret@db.example:5432/engram?sslmode=require";
        assert_eq!(
            Location::parse(Some(pg)).unwrap(),
            Location::Postgres(pg.into())
        );
        assert_eq!(
            Location::parse(Some(pg)).unwrap().to_string(),
            "postgresql db.example:5432/engram"
        );
        let conninfo = "dbname=e user=me password=secret host=127.0.0.1";
        let parsed = Location::parse(Some(conninfo)).unwrap();
        assert_eq!(parsed, Location::Postgres(conninfo.into()));
        assert_eq!(
            parsed.to_string(),
            "postgresql dbname=e user=me host=127.0.0.1"
        );
        let sqlite = |path: &str| Location::Sqlite(PathBuf::from(path));
        assert_eq!(
            Location::parse(Some("/data/e.db")).unwrap(),
            sqlite("/data/e.db")
        );
        assert_eq!(
            Location::parse(Some("sqlite:///data/e.db")).unwrap(),
            sqlite("/data/e.db")
        );
        assert_eq!(
            Location::parse(Some("sqlite:rel/e.db")).unwrap(),
            sqlite("rel/e.db")
        );
        let default = Location::parse(None).unwrap();
        assert!(
            matches!(&default, Location::Sqlite(p) if p.ends_with("engram/engram.db")),
            "{default:?}"
        );
        assert_eq!(Location::parse(Some("  ")).unwrap(), default);
        let error = Location::parse(Some("mysql://x/y"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("mysql://") && error.contains("postgres://"),
            "{error}"
        );
    }
}
