//! Helpers around `std::process::Command`: running, capturing, privileges.

use std::{
    env, fs,
    path::{Path, PathBuf},
    process::{Command, ExitCode, ExitStatus, Stdio},
};

use anyhow::{Context, Result, bail};

/// Runs `command` with inherited stdio; an error if it cannot start or fails.
pub fn run(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot run `{}`", show(command)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", show(command));
    }
    Ok(())
}

/// Runs `command` without stdin and returns its stdout; on failure the error
/// carries its stdout and stderr.
pub fn output(command: &mut Command) -> Result<String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `{}`", show(command)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}):\n{}{}",
            show(command),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether `command` runs and succeeds, all output discarded.
pub fn succeeds(command: &mut Command) -> bool {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// `command` as a shell-like string, for messages.
pub fn show(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(
        command
            .get_args()
            .map(|arg| arg.to_string_lossy().into_owned()),
    );
    words.join(" ")
}

/// The exit code to pass on for a child's exit status.
pub fn exit_code(status: ExitStatus) -> ExitCode {
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    }
}

/// `name` found in a directory of `$PATH`.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    if let Ok(status) = fs::read_to_string("/proc/self/status")
        && let Some(line) = status.lines().find(|line| line.starts_with("Uid:"))
    {
        // Uid: real effective saved filesystem
        return line.split_whitespace().nth(2) == Some("0");
    }
    output(Command::new("id").arg("-u")).is_ok_and(|uid| uid.trim() == "0")
}

/// A command that runs `program` as root: directly when we are root, else via `sudo -n`.
pub fn as_root(program: impl AsRef<Path>) -> Result<Command> {
    let program = program.as_ref();
    if is_root() {
        return Ok(Command::new(program));
    }
    if find_in_path("sudo").is_none() {
        bail!("this needs root, but we are not root and sudo is not installed");
    }
    let mut command = Command::new("sudo");
    command.arg("-n").arg(program);
    Ok(command)
}

/// Quotes `word` for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}
