//! Private PostgreSQL clusters: a throwaway one for tests, a persistent one for development.
//!
//! PostgreSQL refuses to run as root, so as root the cluster belongs to, and runs as,
//! the `postgres` OS user (via `runuser`).

use std::{
    fs,
    net::TcpListener,
    os::unix::{fs::chown, process::CommandExt},
    path::{Path, PathBuf},
    process::{self, Child, Command, Stdio},
};

use anyhow::{Context, Result, bail};

use super::PgInstall;
use crate::cmd;

/// Where and how to run a private cluster.
pub struct ClusterConfig {
    /// Directory for `data/`, `sock/` and `postgres.log`.
    pub dir: PathBuf,
    /// Used instead of `dir` when we run as root and the `postgres` user cannot reach `dir`.
    pub fallback_dir: PathBuf,
    /// Start from an empty directory and delete a fallback directory afterwards.
    pub throwaway: bool,
    /// Port to listen on if it is free; otherwise (or if `None`) any free port.
    pub port: Option<u16>,
    /// Server settings, `name=value`, passed as `-c name=value` (through a shell).
    pub settings: &'static [&'static str],
}

impl ClusterConfig {
    /// A throwaway cluster for `cargo xtask test` under `<target>/engram-test-pg`,
    /// tuned for speed over durability.
    pub fn test(target: &Path) -> Self {
        Self {
            dir: target.join("engram-test-pg"),
            fallback_dir: PathBuf::from(format!("/tmp/engram-test-pg-{}", process::id())),
            throwaway: true,
            port: None,
            settings: &[
                "fsync=off",
                "synchronous_commit=off",
                "full_page_writes=off",
                "max_connections=300",
                "shared_buffers=256MB",
            ],
        }
    }

    /// The primary of `cargo xtask cluster`, under `<target>/engram-team-pg`, fresh each run.
    pub fn team(target: &Path) -> Self {
        Self {
            dir: target.join("engram-team-pg"),
            fallback_dir: PathBuf::from(format!("/tmp/engram-team-pg-{}", process::id())),
            throwaway: true,
            port: None,
            settings: &["max_connections=300", "shared_buffers=256MB"],
        }
    }

    /// Its streaming replica, under `<target>/engram-team-replica`.
    pub fn team_replica(target: &Path) -> Self {
        Self {
            dir: target.join("engram-team-replica"),
            fallback_dir: PathBuf::from(format!("/tmp/engram-team-replica-{}", process::id())),
            ..Self::team(target)
        }
    }

    /// A persistent development cluster under `<target>/engram-dev-pg` on port 5433
    /// (if free); an already running one is reused.
    pub fn dev(target: &Path) -> Self {
        Self {
            dir: target.join("engram-dev-pg"),
            fallback_dir: PathBuf::from("/tmp/engram-dev-pg"),
            throwaway: false,
            port: Some(5433),
            settings: &["max_connections=300"],
        }
    }
}

/// A running private cluster; dropping it stops the server if we started it.
///
/// If this process dies without dropping it (Ctrl-C, kill), a watchdog process
/// stops the server within a second.
pub struct Cluster {
    pg: PgInstall,
    dir: PathBuf,
    port: u16,
    user: RunAs,
    /// We started the server, so we stop it.
    started: bool,
    /// Delete `dir` when dropped (a throwaway cluster in the fallback directory).
    remove_dir: bool,
    watchdog: Option<Child>,
}

impl Cluster {
    /// A cluster not yet running: its directory prepared as `config` says, no port yet.
    fn unstarted(pg: &PgInstall, config: &ClusterConfig) -> Result<Self> {
        let user = RunAs::detect()?;
        let dir = prepare_dir(pg, config, &user)?;
        Ok(Cluster {
            pg: pg.clone(),
            remove_dir: config.throwaway && dir != config.dir,
            dir,
            port: 0,
            user,
            started: false,
            watchdog: None,
        })
    }

    /// Creates (`initdb`) and starts a cluster as `config` says.
    pub fn start(pg: &PgInstall, config: &ClusterConfig) -> Result<Self> {
        let mut cluster = Self::unstarted(pg, config)?;
        if !config.throwaway
            && let Some(port) = cluster.running_port()
        {
            cluster.port = port;
            return Ok(cluster);
        }
        if !cluster.data_dir().join("PG_VERSION").is_file() {
            cluster.initdb()?;
        }
        cluster.port = choose_port(config.port)?;
        cluster.start_server(config.settings)?;
        Ok(cluster)
    }

    /// A streaming replica of this cluster as `config` says: `pg_basebackup -R` of this one,
    /// started as a hot standby.
    pub fn replica(&self, config: &ClusterConfig) -> Result<Self> {
        let mut replica = Self::unstarted(&self.pg, config)?;
        cmd::output(
            replica
                .user
                .command(&self.pg.bin("pg_basebackup"))
                .args([
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "postgres",
                ])
                .arg("-D")
                .arg(replica.data_dir())
                .args(["-R", "-X", "stream", "--no-sync", "--checkpoint=fast"])
                .current_dir("/"),
        )
        .context("pg_basebackup failed")?;
        replica.port = choose_port(None)?;
        replica.start_server(config.settings)?;
        Ok(replica)
    }

    /// The server's process id (the first line of `postmaster.pid`), while it runs.
    pub fn postmaster_pid(&self) -> Option<u32> {
        let pid_file = fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        pid_file.lines().next()?.trim().parse().ok()
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `program` as the user the server runs as (PgBouncer will not run as root either), and
    /// `paths` handed to that user.
    pub fn as_server_user(&self, program: &Path, paths: &[&Path]) -> Result<Command> {
        for path in paths {
            self.user.own(path)?;
        }
        Ok(self.user.command(program))
    }

    /// The URL to connect as the `postgres` superuser (no password).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Drops `database` if it exists, creates it empty, and returns its URL.
    pub fn fresh_database(&self, pg: &PgInstall, database: &str) -> Result<String> {
        let psql = super::find_psql(Some(pg)).context("psql not found")?;
        for sql in [
            format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"),
            format!("CREATE DATABASE {database}"),
        ] {
            cmd::output(Command::new(&psql).arg(self.url()).args(["-qc", &sql]))?;
        }
        Ok(format!(
            "postgres://postgres@127.0.0.1:{}/{database}",
            self.port
        ))
    }

    /// The directory holding `data/` and `postgres.log`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn pg_ctl(&self) -> Command {
        let mut command = self.user.command(&self.pg.bin("pg_ctl"));
        command.arg("-D").arg(self.data_dir()).current_dir("/");
        command
    }

    fn stop_command(&self) -> Command {
        let mut command = self.pg_ctl();
        command.args(["-m", "fast", "-w", "stop"]);
        command
    }

    /// The port of a server already running on our data directory.
    fn running_port(&self) -> Option<u16> {
        let pid_file = fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        if !cmd::succeeds(self.pg_ctl().arg("status")) {
            return None;
        }
        pid_file.lines().nth(3)?.trim().parse().ok()
    }

    fn initdb(&self) -> Result<()> {
        let data = self.data_dir();
        let mut failure = None;
        for locale in ["C.UTF-8", "C"] {
            let result = cmd::output(
                self.user
                    .command(&self.pg.bin("initdb"))
                    .arg("-D")
                    .arg(&data)
                    .args(["-U", "postgres", "--auth=trust", "--encoding=UTF8"])
                    .arg(format!("--locale={locale}"))
                    .arg("--no-sync")
                    .current_dir(&self.dir),
            );
            match result {
                Ok(_) => return Ok(()),
                Err(err) => failure = Some(err),
            }
            if data.exists() {
                fs::remove_dir_all(&data)?;
            }
        }
        Err(failure.expect("initdb ran").context("initdb failed"))
    }

    fn start_server(&mut self, settings: &[&str]) -> Result<()> {
        let sock = self.dir.join("sock");
        let sock = sock.to_string_lossy();
        // A Unix socket path (`<dir>/.s.PGSQL.<port>`) must fit in 107 bytes;
        // beyond that, do without one (we connect over TCP anyway).
        let sock = if sock.len() + "/.s.PGSQL.65535".len() <= 107 {
            cmd::shell_quote(&sock)
        } else {
            "''".to_owned()
        };
        let mut options = format!("-c listen_addresses=127.0.0.1 -p {} -k {sock}", self.port);
        for setting in settings {
            options.push_str(" -c ");
            options.push_str(setting);
        }
        let log = self.dir.join("postgres.log");
        let result = cmd::output(
            self.pg_ctl()
                .args(["-w", "-t", "60", "-l"])
                .arg(&log)
                .arg("-o")
                .arg(&options)
                .arg("start"),
        );
        self.started = self.data_dir().join("postmaster.pid").exists();
        if let Err(err) = result {
            let log_text = fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = log_text.lines().collect();
            let tail = lines[lines.len().saturating_sub(20)..].join("\n");
            return Err(err.context(format!(
                "PostgreSQL did not start; end of {}:\n{tail}",
                log.display()
            )));
        }
        self.started = true;
        self.watchdog = self.spawn_watchdog();
        Ok(())
    }

    /// A process, outside our process group (so Ctrl-C does not reach it), that
    /// stops the server once this process is gone.
    fn spawn_watchdog(&self) -> Option<Child> {
        let stop = self.stop_command();
        Command::new("sh")
            .arg("-c")
            .arg(r#"while kill -0 "$0" 2>/dev/null; do sleep 1; done; exec "$@""#)
            .arg(process::id().to_string())
            .arg(stop.get_program())
            .args(stop.get_args())
            .current_dir("/")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        if self.started {
            match cmd::output(&mut self.stop_command()) {
                Ok(_) => println!(
                    "engram: stopped the PostgreSQL cluster in {}",
                    self.dir.display()
                ),
                Err(err) => eprintln!("engram: warning: cannot stop PostgreSQL: {err:#}"),
            }
        }
        if self.remove_dir {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// The directory to use for `config`, created (emptied if throwaway) and usable by `user`.
fn prepare_dir(pg: &PgInstall, config: &ClusterConfig, user: &RunAs) -> Result<PathBuf> {
    for (index, dir) in [&config.dir, &config.fallback_dir].into_iter().enumerate() {
        if config.throwaway {
            wipe(pg, dir, user)?;
        }
        for path in [dir.clone(), dir.join("sock")] {
            fs::create_dir_all(&path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            user.own(&path)?;
        }
        if user.can_use(dir) {
            return Ok(dir.clone());
        }
        if index == 0 {
            println!(
                "engram: the postgres user cannot reach {}; using {} instead",
                dir.display(),
                config.fallback_dir.display()
            );
        }
    }
    bail!(
        "the postgres user cannot use {}",
        config.fallback_dir.display()
    )
}

/// Removes `dir`, first stopping a server left running there by an earlier run.
fn wipe(pg: &PgInstall, dir: &Path, user: &RunAs) -> Result<()> {
    let data = dir.join("data");
    if data.join("postmaster.pid").exists() {
        println!("engram: stopping a leftover cluster in {}", dir.display());
        let pg_ctl = pg.bin("pg_ctl");
        let mut stop = user.command(&pg_ctl);
        cmd::succeeds(
            stop.arg("-D")
                .arg(&data)
                .args(["-m", "immediate", "stop"])
                .current_dir("/"),
        );
    }
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    Ok(())
}

/// `preferred` if it is free on 127.0.0.1, else a free port the system picks.
fn choose_port(preferred: Option<u16>) -> Result<u16> {
    if let Some(port) = preferred
        && TcpListener::bind(("127.0.0.1", port)).is_ok()
    {
        return Ok(port);
    }
    let listener = TcpListener::bind(("127.0.0.1", 0)).context("cannot find a free port")?;
    Ok(listener.local_addr()?.port())
}

/// The OS user the server runs as.
enum RunAs {
    /// Ourselves (we are not root).
    Me,
    /// The `postgres` user (we are root).
    Postgres { uid: u32, gid: u32 },
}

impl RunAs {
    fn detect() -> Result<Self> {
        if !cmd::is_root() {
            return Ok(Self::Me);
        }
        // As root the server runs as `postgres` through util-linux's `runuser`, which lives in
        // /usr/sbin (not on every user's PATH): without it, every later step fails obscurely.
        if !cmd::succeeds(Command::new("runuser").arg("--version")) {
            bail!(
                "PostgreSQL will not run as root, and `runuser` (util-linux), which starts it as \
                 the postgres user, is not on PATH: add /usr/sbin to PATH (or install util-linux)"
            );
        }
        let id = |flag: &str| -> Result<u32> {
            let id = cmd::output(Command::new("id").args([flag, "postgres"])).context(
                "PostgreSQL will not run as root, and there is no `postgres` user to run it as",
            )?;
            id.trim()
                .parse()
                .context("cannot read the postgres user's id")
        };
        Ok(Self::Postgres {
            uid: id("-u")?,
            gid: id("-g")?,
        })
    }

    fn command(&self, program: &Path) -> Command {
        match self {
            Self::Me => Command::new(program),
            Self::Postgres { .. } => {
                let mut command = Command::new("runuser");
                command.args(["-u", "postgres", "--"]).arg(program);
                command
            }
        }
    }

    /// Hands `path` to this user.
    fn own(&self, path: &Path) -> Result<()> {
        match *self {
            Self::Me => Ok(()),
            Self::Postgres { uid, gid } => chown(path, Some(uid), Some(gid))
                .with_context(|| format!("cannot chown {} to postgres", path.display())),
        }
    }

    /// Whether this user can create files in `dir` (and reach it).
    fn can_use(&self, dir: &Path) -> bool {
        match self {
            Self::Me => true,
            Self::Postgres { .. } => {
                let mut test = self.command(Path::new("test"));
                cmd::succeeds(test.arg("-w").arg(dir).arg("-a").arg("-x").arg(dir))
            }
        }
    }
}
