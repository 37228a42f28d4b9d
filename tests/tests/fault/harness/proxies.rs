//! PgBouncer and HAProxy as child processes, configured from the repository's own files in
//! `deploy/team/` (what the README documents and `cargo xtask cluster` runs). Killed when
//! dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use super::server::free_port;

const PGBOUNCER: &str = "/usr/sbin/pgbouncer";
const HAPROXY: &str = "/usr/sbin/haproxy";

/// `deploy/team/NAME` in the repository.
fn deployed(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/team")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A running PgBouncer in transaction pooling mode with two databases: `engram` (the
/// primary) and `engram_replica`.
pub struct PgBouncer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl PgBouncer {
    /// Starts PgBouncer in front of the primary and the replica on 127.0.0.1 (their
    /// `postgres` databases, user `postgres` without a password), and waits until it listens.
    /// Its files live under `/tmp`, which the `postgres` user can reach wherever the checkout
    /// is.
    pub async fn start(primary_port: u16, replica_port: u16) -> Self {
        assert!(
            Path::new(PGBOUNCER).is_file(),
            "{PGBOUNCER} is missing: `cargo xtask test` installs Debian's pgbouncer"
        );
        let dir = tempfile::Builder::new()
            .prefix("engram-fault-pgbouncer-")
            .tempdir_in("/tmp")
            .expect("a directory under /tmp")
            .keep();
        let port = free_port();
        let config = deployed("pgbouncer.ini")
            .replace("@PRIMARY_HOST@", "127.0.0.1")
            .replace("@PRIMARY_PORT@", &primary_port.to_string())
            .replace("@REPLICA_HOST@", "127.0.0.1")
            .replace("@REPLICA_PORT@", &replica_port.to_string())
            .replace("@DATABASE@", "postgres")
            .replace("@LISTEN_HOST@", "127.0.0.1")
            .replace("@LISTEN_PORT@", &port.to_string())
            .replace("@AUTH_TYPE@", "trust")
            .replace("@DIR@", &dir.display().to_string());
        let ini = dir.join("pgbouncer.ini");
        std::fs::write(&ini, config).expect("writing pgbouncer.ini");
        std::fs::write(dir.join("userlist.txt"), "\"postgres\" \"\"\n").expect("userlist");
        // PgBouncer will not run as root either.
        let mut command = match super::cluster::postgres_user() {
            Some((uid, gid)) => {
                for path in [dir.clone(), ini.clone(), dir.join("userlist.txt")] {
                    std::os::unix::fs::chown(&path, Some(uid), Some(gid)).expect("chown");
                }
                let mut command = Command::new("runuser");
                command.args(["-u", "postgres", "--", PGBOUNCER]);
                command
            }
            None => Command::new(PGBOUNCER),
        };
        let child = command
            .arg(&ini)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("starting pgbouncer");
        wait_listening(port, || std::fs::read_to_string(dir.join("pgbouncer.log"))).await;
        Self { child, port, dir }
    }

    /// `postgres://postgres@127.0.0.1:PORT/DATABASE` through PgBouncer.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // Through runuser, the child is runuser: PgBouncer itself goes with its pid file.
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = std::process::Command::new("kill").arg(pid.trim()).status();
        }
        let _ = self.child.start_kill();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A running HAProxy with `deploy/team/haproxy.cfg` in front of two engram processes.
pub struct HaProxy {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl HaProxy {
    /// Starts HAProxy before the engram processes at `a` and `b` (`127.0.0.1:PORT`) and waits
    /// until it listens.
    pub async fn start(dir: &Path, a: &str, b: &str) -> Self {
        assert!(
            Path::new(HAPROXY).is_file(),
            "{HAPROXY} is missing: `cargo xtask test` installs Debian's haproxy"
        );
        let port = free_port();
        let config = dir.join("haproxy.cfg");
        std::fs::write(&config, deployed("haproxy.cfg")).expect("writing haproxy.cfg");
        let log = dir.join("haproxy.log");
        let child = Command::new(HAPROXY)
            .arg("-f")
            .arg(&config)
            .arg("-db")
            .env("ENGRAM_LISTEN", format!("127.0.0.1:{port}"))
            .env("ENGRAM_SERVER_A", a)
            .env("ENGRAM_SERVER_B", b)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("haproxy's log"))
            .kill_on_drop(true)
            .spawn()
            .expect("starting haproxy");
        wait_listening(port, || std::fs::read_to_string(&log)).await;
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// Waits up to 20 s for something to accept connections on `port`; panics with `log` then.
async fn wait_listening(port: u16, log: impl Fn() -> std::io::Result<String>) {
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "nothing listens on port {port} after 20 s:\n{}",
            log().unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
