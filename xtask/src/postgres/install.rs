//! Installing the PostgreSQL server, its headers and pgvector >= 0.7 with apt (Debian).
//!
//! Everything already installed is detected from files alone, so the common case
//! costs one `pg_config --sharedir`.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    thread,
};

use anyhow::{Context, Result, bail};

use super::{PgInstall, versions_with};
use crate::cmd;

/// The oldest pgvector (major, minor) engram works with.
const MIN_PGVECTOR: (u32, u32) = (0, 7);

/// The apt source we add to get pgvector's source package from Debian trixie.
const TRIXIE_SOURCES_FILE: &str = "/etc/apt/sources.list.d/engram-trixie-src.sources";
const TRIXIE_SOURCES: &str = "\
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";

/// What to do instead when we cannot install.
const MANUAL_HINT: &str = "install PostgreSQL with its server headers and pgvector >= 0.7 \
     yourself, or set ENGRAM_TEST_DATABASE_URL to a server that has them";

/// Makes sure a PostgreSQL server, its headers and pgvector >= 0.7 are installed,
/// installing what is missing; `target` is cargo's target directory (for builds).
pub fn ensure_installed(target: &Path) -> Result<PgInstall> {
    let mut apt = Apt::default();
    let pg = ensure_server(&mut apt)?;
    ensure_pgvector(&pg, &mut apt, target)?;
    Ok(pg)
}

fn has_server_headers(version: u32) -> bool {
    Path::new(&format!("/usr/include/postgresql/{version}/server")).is_dir()
}

fn ensure_server(apt: &mut Apt) -> Result<PgInstall> {
    let installed = versions_with("initdb").last().copied();
    if let Some(version) = installed
        && has_server_headers(version)
    {
        return Ok(PgInstall { version });
    }
    let version = match installed {
        Some(version) => version,
        None => apt.postgresql_version()?,
    };
    let mut packages = Vec::new();
    if installed.is_none() {
        packages.push(format!("postgresql-{version}"));
    }
    if !has_server_headers(version) {
        packages.push(format!("postgresql-server-dev-{version}"));
    }
    apt.install(&packages)?;
    let pg = PgInstall { version };
    if !pg.bin("initdb").is_file() {
        bail!(
            "{} is still missing after installing",
            pg.bin("initdb").display()
        );
    }
    Ok(pg)
}

fn ensure_pgvector(pg: &PgInstall, apt: &mut Apt, target: &Path) -> Result<()> {
    let sharedir = cmd::output(Command::new(pg.bin("pg_config")).arg("--sharedir"))?;
    let control = Path::new(sharedir.trim()).join("extension/vector.control");
    match control_version(&control) {
        Some(version) if recent_enough(&version) => return Ok(()),
        Some(version) => println!("engram: pgvector {version} is too old, engram needs >= 0.7"),
        None => {}
    }
    let package = format!("postgresql-{}-pgvector", pg.version);
    match apt.candidate(&package)? {
        Some(candidate) if recent_enough(&candidate) => apt.install(&[package])?,
        _ => build_pgvector(pg, apt, &target.join("engram-pgvector"))?,
    }
    match control_version(&control) {
        Some(version) if recent_enough(&version) => Ok(()),
        _ => bail!(
            "pgvector >= 0.7 still not installed ({})",
            control.display()
        ),
    }
}

/// `default_version` from an extension's control file.
fn control_version(control: &Path) -> Option<String> {
    let text = fs::read_to_string(control).ok()?;
    text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "default_version").then(|| value.trim().trim_matches('\'').to_owned())
    })
}

/// Whether a pgvector version (`0.8.0`, or a Debian version like `1:0.8.0-1`) is >= 0.7.
fn recent_enough(version: &str) -> bool {
    let upstream = version.split_once(':').map_or(version, |(_, rest)| rest);
    let mut numbers = upstream
        .split(|c: char| !c.is_ascii_digit())
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let major = numbers.next().unwrap_or(0);
    let minor = numbers.next().unwrap_or(0);
    (major, minor) >= MIN_PGVECTOR
}

/// Builds and installs pgvector from Debian trixie's source package into `pg`.
fn build_pgvector(pg: &PgInstall, apt: &mut Apt, dir: &Path) -> Result<()> {
    let mut tools = Vec::new();
    for (tool, package) in [
        ("make", "make"),
        ("gcc", "gcc"),
        ("dpkg-source", "dpkg-dev"),
    ] {
        if cmd::find_in_path(tool).is_none() {
            tools.push(package.to_owned());
        }
    }
    if !Path::new("/usr/include/stdio.h").is_file() {
        tools.push("libc6-dev".to_owned());
    }
    apt.install(&tools)?;

    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if !has_trixie_sources() {
        println!("engram: adding Debian trixie sources as {TRIXIE_SOURCES_FILE} …");
        let staged = dir.join("engram-trixie-src.sources");
        fs::write(&staged, TRIXIE_SOURCES)?;
        cmd::output(cmd::as_root("cp")?.arg(&staged).arg(TRIXIE_SOURCES_FILE))
            .with_context(|| format!("cannot write {TRIXIE_SOURCES_FILE}; {MANUAL_HINT}"))?;
        apt.updated = false;
    }
    apt.update()?;

    println!("engram: downloading pgvector's source package from Debian trixie …");
    cmd::output(
        Command::new("apt-get")
            .args(["-q", "source", "--download-only", "pgvector/trixie"])
            .current_dir(dir),
    )?;
    let (tarball, version) = find_orig_tarball(dir)?;
    println!("engram: building pgvector {version} from Debian source …");
    let src = dir.join("src");
    fs::create_dir(&src)?;
    cmd::output(
        Command::new("tar")
            .arg("-xzf")
            .arg(&tarball)
            .arg("-C")
            .arg(&src),
    )?;
    let tree = fs::read_dir(&src)?
        .filter_map(|entry| Some(entry.ok()?.path()))
        .find(|path| path.join("Makefile").is_file())
        .with_context(|| format!("no Makefile in {}", tarball.display()))?;
    let pg_config = format!("PG_CONFIG={}", pg.bin("pg_config").display());
    let jobs = thread::available_parallelism().map_or(1, usize::from);
    cmd::output(
        Command::new("make")
            .arg(format!("-j{jobs}"))
            .arg("-C")
            .arg(&tree)
            .args([pg_config.as_str(), "OPTFLAGS="]),
    )?;
    println!("engram: installing pgvector {version} …");
    cmd::output(cmd::as_root("make")?.arg("-C").arg(&tree).args([
        pg_config.as_str(),
        "OPTFLAGS=",
        "install",
    ]))
    .with_context(|| format!("cannot install pgvector; {MANUAL_HINT}"))?;
    Ok(())
}

/// The `pgvector_<version>.orig.tar.gz` in `dir`, and its version.
fn find_orig_tarball(dir: &Path) -> Result<(PathBuf, String)> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        if let Some(version) = name
            .strip_prefix("pgvector_")
            .and_then(|rest| rest.strip_suffix(".orig.tar.gz"))
        {
            let version = version.to_owned();
            return Ok((path, version));
        }
    }
    bail!(
        "apt-get source left no pgvector_*.orig.tar.gz in {}",
        dir.display()
    )
}

/// Whether some apt source already offers Debian trixie's source packages.
fn has_trixie_sources() -> bool {
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(entries) = fs::read_dir("/etc/apt/sources.list.d") {
        files.extend(entries.filter_map(|entry| Some(entry.ok()?.path())));
    }
    files.iter().any(|file| {
        let Ok(text) = fs::read_to_string(file) else {
            return false;
        };
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.starts_with('#'))
            .collect();
        match file.extension().and_then(|ext| ext.to_str()) {
            Some("sources") => {
                lines
                    .iter()
                    .any(|line| line.starts_with("Types:") && line.contains("deb-src"))
                    && lines
                        .iter()
                        .any(|line| line.starts_with("Suites:") && line.contains("trixie"))
            }
            _ => lines
                .iter()
                .any(|line| line.starts_with("deb-src") && line.contains(" trixie")),
        }
    })
}

/// apt-get and apt-cache, updating the package lists at most once per run.
#[derive(Default)]
struct Apt {
    updated: bool,
}

impl Apt {
    fn update(&mut self) -> Result<()> {
        if !self.updated {
            println!("engram: updating apt package lists …");
            cmd::run(apt_get()?.args(["-q", "update"]))
                .with_context(|| format!("cannot update apt's package lists; {MANUAL_HINT}"))?;
            self.updated = true;
        }
        Ok(())
    }

    fn install(&mut self, packages: &[String]) -> Result<()> {
        if packages.is_empty() {
            return Ok(());
        }
        let list = packages.join(" ");
        self.update()?;
        println!("engram: installing {list} …");
        cmd::run(
            apt_get()?
                .args(["-q", "-y", "--no-install-recommends", "install"])
                .args(packages),
        )
        .with_context(|| {
            format!(
                "cannot install {list}; as root, run `apt-get install -y \
                 --no-install-recommends {list}`, or {MANUAL_HINT}"
            )
        })
    }

    /// The version apt would install for `package`, if any.
    fn candidate(&mut self, package: &str) -> Result<Option<String>> {
        self.update()?;
        let policy = cmd::output(Command::new("apt-cache").args(["policy", package]))?;
        Ok(policy
            .lines()
            .find_map(|line| line.trim().strip_prefix("Candidate:"))
            .map(str::trim)
            .filter(|version| !version.is_empty() && *version != "(none)")
            .map(str::to_owned))
    }

    /// The PostgreSQL major version Debian's `postgresql` package stands for.
    fn postgresql_version(&mut self) -> Result<u32> {
        let candidate = self
            .candidate("postgresql")?
            .with_context(|| format!("apt offers no `postgresql` package; {MANUAL_HINT}"))?;
        let major: String = candidate.chars().take_while(char::is_ascii_digit).collect();
        major
            .parse()
            .with_context(|| format!("cannot read a major version from postgresql {candidate}"))
    }
}

/// `apt-get`, as root, non-interactive.
fn apt_get() -> Result<Command> {
    if cmd::find_in_path("apt-get").is_none() {
        bail!("apt-get not found; {MANUAL_HINT}");
    }
    let mut command = cmd::as_root("env")?;
    command.args(["DEBIAN_FRONTEND=noninteractive", "apt-get"]);
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::recent_enough;

    #[test]
    fn pgvector_versions() {
        assert!(recent_enough("0.8.0"));
        assert!(recent_enough("0.7.0-1"));
        assert!(recent_enough("1:0.7.4-2+b1"));
        assert!(recent_enough("1.0.0"));
        assert!(!recent_enough("0.6.2"));
        assert!(!recent_enough("0.4.1-1"));
        assert!(!recent_enough(""));
    }
}
