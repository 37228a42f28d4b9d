//! A private, throwaway PostgreSQL cluster that a test may stop and start at will, without
//! disturbing the shared test server: `initdb` and `pg_ctl` from the installation `cargo
//! xtask test` found (`ENGRAM_TEST_PG_BIN`), data under `/tmp`, a free loopback port, no
//! Unix socket. PostgreSQL refuses to run as root, so as root it runs as the `postgres` user
//! (`runuser`), as xtask's own clusters do. Stopped and removed when dropped.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The variable `cargo xtask test` sets to the directory of `initdb` and `pg_ctl`.
pub const PG_BIN_VAR: &str = "ENGRAM_TEST_PG_BIN";

/// A private cluster.
pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    /// `Some((uid, gid))` of `postgres` when we are root.
    run_as: Option<(u32, u32)>,
}

impl Cluster {
    /// Creates a cluster (`initdb`) and starts it.
    pub async fn start() -> Self {
        let bin = std::env::var_os(PG_BIN_VAR).map(PathBuf::from).unwrap_or_else(|| {
            panic!(
                "{PG_BIN_VAR} is not set: this test restarts a PostgreSQL cluster of its own and \
                 needs PostgreSQL's server programs; run the tests with `cargo xtask test`, which \
                 installs PostgreSQL and sets it (or set it to the directory of initdb and pg_ctl)"
            )
        });
        assert!(
            bin.join("pg_ctl").is_file() && bin.join("initdb").is_file(),
            "{PG_BIN_VAR}={} holds no initdb and pg_ctl",
            bin.display()
        );
        let cluster = Self::unstarted(bin);
        let initdb = cluster
            .command("initdb")
            .arg("-D")
            .arg(cluster.data())
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
            ])
            .arg("--no-sync")
            .output()
            .expect("running initdb");
        assert!(
            initdb.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&initdb.stderr)
        );
        cluster.resume().await;
        cluster
    }

    /// A cluster to be: its directory (under `/tmp`, owned by the user it runs as) and port.
    fn unstarted(bin: PathBuf) -> Self {
        let run_as = postgres_user();
        let dir = tempfile::Builder::new()
            .prefix("engram-fault-pg-")
            .tempdir_in("/tmp")
            .expect("a directory under /tmp")
            .keep();
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                .expect("handing the cluster's directory to postgres");
        }
        Self {
            bin,
            dir,
            port: super::server::free_port(),
            run_as,
        }
    }

    /// A streaming replica of this cluster (`pg_basebackup -R`), started: a hot standby that
    /// answers reads and replays this cluster's writes.
    pub async fn replica(&self) -> Self {
        let replica = Self::unstarted(self.bin.clone());
        let backup = replica
            .command("pg_basebackup")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .arg("-D")
            .arg(replica.data())
            .args(["-R", "-X", "stream", "--no-sync", "--checkpoint=fast"])
            .output()
            .expect("running pg_basebackup");
        assert!(
            backup.status.success(),
            "pg_basebackup failed: {}",
            String::from_utf8_lossy(&backup.stderr)
        );
        replica.resume().await;
        replica
    }

    /// Runs `sql` with `psql` on the `postgres` database and returns what it printed
    /// (unaligned, tuples only).
    pub fn sql(&self, sql: &str) -> String {
        let output = self
            .command("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .args(["-X", "-A", "-t", "-q", "-c", sql])
            .output()
            .expect("running psql");
        assert!(
            output.status.success(),
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again) on the same port and data, waiting until it accepts
    /// connections.
    pub async fn resume(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k '' -c fsync=off -c full_page_writes=off",
            self.port
        );
        let output = tokio::process::Command::from(self.command("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-t", "60", "-l"])
            .arg(self.dir.join("postgres.log"))
            .arg("-o")
            .arg(options)
            .arg("start")
            .output()
            .await
            .expect("running pg_ctl start");
        assert!(
            output.status.success(),
            "pg_ctl start failed: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.dir.join("postgres.log")).unwrap_or_default()
        );
    }

    /// SIGSTOP to the server and every process of it: it neither answers nor fails, as a
    /// frozen machine or a network gone quiet does.
    pub fn freeze(&self) {
        self.signal_all("STOP");
    }

    /// SIGCONT after [`Cluster::freeze`].
    pub fn thaw(&self) {
        self.signal_all("CONT");
    }

    fn signal_all(&self, signal: &str) {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid"))
            .expect("reading postmaster.pid");
        let pid = pid_file
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let flag = format!("-{signal}");
        let _ = Command::new("pkill").args([&flag, "-P", &pid]).status();
        let status = Command::new("kill").args([&flag, &pid]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill {flag} {pid}");
    }

    /// `pg_ctl stop -m immediate`: every server process quits at once, as in a crash;
    /// recovery replays the WAL at the next start.
    pub async fn stop_immediately(&self) {
        let output = tokio::process::Command::from(self.stop_command())
            .output()
            .await
            .expect("running pg_ctl stop");
        assert!(
            output.status.success(),
            "pg_ctl stop failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn stop_command(&self) -> Command {
        let mut command = self.command("pg_ctl");
        command
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"]);
        command
    }

    fn command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        let mut command = match self.run_as {
            Some(_) => {
                let mut command = Command::new("runuser");
                command.args(["-u", "postgres", "--"]).arg(program);
                command
            }
            None => Command::new(program),
        };
        command.current_dir("/").stdin(Stdio::null());
        command
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.data().join("postmaster.pid").exists() {
            let _ = self
                .stop_command()
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `postgres`'s uid and gid when we are root (PostgreSQL will not run as root), else `None`.
pub fn postgres_user() -> Option<(u32, u32)> {
    let id = |args: &[&str]| -> Option<u32> {
        let output = Command::new("id").args(args).output().ok()?;
        String::from_utf8_lossy(&output.stdout).trim().parse().ok()
    };
    if id(&["-u"])? != 0 {
        return None;
    }
    let uid = id(&["-u", "postgres"]).expect(
        "running as root, and PostgreSQL will not run as root: a `postgres` user is needed",
    );
    let gid = id(&["-g", "postgres"]).expect("the postgres user's group");
    Some((uid, gid))
}
