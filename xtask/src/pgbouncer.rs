//! PgBouncer (Debian's package) in transaction pooling mode, as a child process: in front of
//! the test cluster, so that `cargo xtask test` runs the PostgreSQL conformance suite through
//! it too (`ENGRAM_TEST_PGBOUNCER_URL`), and in front of `cargo xtask cluster`'s primary and
//! replica, configured from `deploy/team/pgbouncer.ini`. Stopped when dropped.

use std::{
    fs,
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};

use crate::{postgres::Cluster, workspace_root};

const PGBOUNCER: &str = "/usr/sbin/pgbouncer";

/// A running PgBouncer.
pub struct PgBouncer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl PgBouncer {
    /// In front of every database of the test cluster (`* =`), in `dir`.
    pub fn for_tests(cluster: &Cluster, dir: &Path) -> Result<Self> {
        let config = format!(
            "[databases]\n* = host=127.0.0.1 port={}\n\n[pgbouncer]\n\
             listen_addr = 127.0.0.1\nlisten_port = @LISTEN_PORT@\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = @DIR@/userlist.txt\npool_mode = transaction\n\
             max_client_conn = 2000\ndefault_pool_size = 4\nserver_idle_timeout = 2\n\
             logfile = @DIR@/pgbouncer.log\npidfile = @DIR@/pgbouncer.pid\n",
            cluster.port()
        );
        Self::start(cluster, dir, &config)
    }

    /// `deploy/team/pgbouncer.ini` in front of `primary` and `replica` (database
    /// `postgres` on each), in `dir`.
    pub fn for_team(primary: &Cluster, replica: &Cluster, dir: &Path) -> Result<Self> {
        let template = fs::read_to_string(workspace_root().join("deploy/team/pgbouncer.ini"))
            .context("reading deploy/team/pgbouncer.ini")?;
        let config = template
            .replace("@PRIMARY_HOST@", "127.0.0.1")
            .replace("@PRIMARY_PORT@", &primary.port().to_string())
            .replace("@REPLICA_HOST@", "127.0.0.1")
            .replace("@REPLICA_PORT@", &replica.port().to_string())
            .replace("@DATABASE@", "postgres")
            .replace("@LISTEN_HOST@", "127.0.0.1")
            .replace("@AUTH_TYPE@", "trust");
        Self::start(primary, dir, &config)
    }

    /// Writes `config` (with `@LISTEN_PORT@` and `@DIR@` filled in) and starts PgBouncer as
    /// the user `cluster` runs as.
    fn start(cluster: &Cluster, dir: &Path, config: &str) -> Result<Self> {
        if !Path::new(PGBOUNCER).is_file() {
            bail!("{PGBOUNCER} is missing (Debian's pgbouncer package)");
        }
        if dir.exists() {
            fs::remove_dir_all(dir)?;
        }
        fs::create_dir_all(dir)?;
        let port = crate::eval::free_port()?;
        let config = config
            .replace("@LISTEN_PORT@", &port.to_string())
            .replace("@DIR@", &dir.display().to_string());
        let ini = dir.join("pgbouncer.ini");
        let users = dir.join("userlist.txt");
        fs::write(&ini, config)?;
        fs::write(&users, "\"postgres\" \"\"\n")?;
        let child = cluster
            .as_server_user(Path::new(PGBOUNCER), &[dir, &ini, &users])?
            .arg(&ini)
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting pgbouncer")?;
        let bouncer = Self {
            child,
            port,
            dir: dir.to_owned(),
        };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if started.elapsed() > Duration::from_secs(20) {
                let log = fs::read_to_string(dir.join("pgbouncer.log")).unwrap_or_default();
                bail!("PgBouncer did not listen within 20 s:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(bouncer)
    }

    /// `postgres://postgres@127.0.0.1:PORT/DATABASE` through PgBouncer.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        // As root the child is `runuser`; PgBouncer itself is stopped by its pid file.
        if let Ok(pid) = fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = std::process::Command::new("kill").arg(pid.trim()).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
