//! `engram hooks claude-code`: Claude Code's hooks that make an agent remember without being
//! told. At `SessionStart` the brief is added to the model's context, and at
//! `UserPromptSubmit` what memory holds on the prompt (Claude Code adds a hook's standard
//! output to the context when it exits 0). Printed as settings JSON, or merged into a
//! settings file, keeping every other setting and a backup of the file as it was.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::cli::HooksArgs;

/// The hook events engram adds a command to.
const EVENTS: [&str; 2] = ["SessionStart", "UserPromptSubmit"];

/// Runs `engram hooks claude-code`.
///
/// # Errors
/// A settings file that cannot be read, is not a JSON object, or cannot be written.
pub fn run(args: &HooksArgs, database_url: Option<&str>) -> Result<()> {
    let engram = std::env::current_exe().context("finding the engram executable")?;
    let database = match (&args.url, database_url) {
        (None, Some(url)) => Some(database_for_hooks(url)?),
        _ => None,
    };
    let hooks = hooks(&engram.to_string_lossy(), args, database.as_deref());
    if !args.install && !args.uninstall {
        outln!("{}", serde_json::to_string_pretty(&hooks)?);
        eprintln!(
            "(add this to {} or run again with --install)",
            args.settings.display()
        );
        return Ok(());
    }
    // A settings file that is a link (dotfiles) is written where it points.
    let path = &std::fs::canonicalize(&args.settings).unwrap_or_else(|_| args.settings.clone());
    let existing = match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => json!({}),
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON; nothing was changed", path.display()))?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && args.uninstall => {
            outln!("{} does not exist: no hooks to take out", path.display());
            return Ok(());
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
    };
    anyhow::ensure!(
        existing.is_object(),
        "{} is not a JSON object; nothing was changed",
        path.display()
    );
    anyhow::ensure!(
        existing.get("hooks").is_none_or(Value::is_object),
        "\"hooks\" in {} is not an object; nothing was changed",
        path.display()
    );
    let updated = if args.install {
        with_hooks(without_hooks(existing), &hooks)
    } else {
        without_hooks(existing)
    };
    if path.exists() {
        let backup = backup_path(path);
        std::fs::copy(path, &backup)
            .with_context(|| format!("backing up {} to {}", path.display(), backup.display()))?;
        eprintln!("backed up {} to {}", path.display(), backup.display());
        prune_backups(path, BACKUPS_KEPT);
    }
    write_atomically(path, &(serde_json::to_string_pretty(&updated)? + "\n"))?;
    if args.install {
        outln!(
            "installed engram's hooks in {} (workspace {}): the brief at session start, \
             recall on every prompt; `engram hooks claude-code --uninstall --settings {}` \
             takes them out",
            path.display(),
            args.workspace.as_deref().unwrap_or_default(),
            path.display()
        );
    } else {
        outln!("took engram's hooks out of {}", path.display());
    }
    Ok(())
}

/// The settings fragment: `{"hooks": {"SessionStart": […], "UserPromptSubmit": […]}}`, each
/// a command running `engram` at `engram_path` with a time limit a second under Claude
/// Code's.
pub fn hooks(engram_path: &str, args: &HooksArgs, database_url: Option<&str>) -> Value {
    let own_limit = format!("{}s", args.timeout.saturating_sub(1).max(1));
    let mut common = vec![
        "--hook".to_owned(),
        "--workspace".to_owned(),
        shell_quote(args.workspace.as_deref().unwrap_or_default()),
        "--timeout".to_owned(),
        own_limit,
    ];
    match (&args.url, database_url) {
        (Some(url), _) => common.extend(["--url".to_owned(), shell_quote(url)]),
        (None, Some(database)) => {
            common.extend(["--database-url".to_owned(), shell_quote(database)]);
        }
        (None, None) => {}
    }
    let engram = shell_quote(engram_path);
    let brief = format!("{engram} brief {}", common.join(" "));
    let recall = format!(
        "{engram} recall {} --limit {}",
        common.join(" "),
        args.limit
    );
    let entry = |command: String| json!([{ "hooks": [{ "type": "command", "command": command, "timeout": args.timeout }] }]);
    json!({ "hooks": { "SessionStart": entry(brief), "UserPromptSubmit": entry(recall) } })
}

/// The database as the hooks name it: a SQLite file by its absolute path (a hook runs in
/// whatever directory the client is in); a PostgreSQL URL only without a password, which the
/// settings file would otherwise keep in the clear.
///
/// # Errors
/// A URL with a password, or one that names no database engram knows.
fn database_for_hooks(url: &str) -> Result<String> {
    let location = engram::backend::Location::parse(Some(url))?;
    anyhow::ensure!(
        !location.holds_password(),
        "the database URL holds a password, which the hooks would keep in the settings file: \
         give the hooks a server instead (--url), or keep the password out of the URL \
         (~/.pgpass, PGPASSWORD in the client's environment)"
    );
    Ok(match location {
        engram::backend::Location::Sqlite(path) => (std::path::absolute(&path).unwrap_or(path))
            .display()
            .to_string(),
        engram::backend::Location::Postgres(url) => url,
    })
}

/// `settings` with `hooks`' entries appended to its own under each event.
fn with_hooks(mut settings: Value, hooks: &Value) -> Value {
    let events = settings
        .as_object_mut()
        .map(|object| object.entry("hooks").or_insert_with(|| json!({})));
    if let Some(Value::Object(events)) = events {
        for event in EVENTS {
            let ours = hooks["hooks"][event]
                .as_array()
                .cloned()
                .unwrap_or_default();
            match events.entry(event).or_insert_with(|| json!([])) {
                Value::Array(groups) => groups.extend(ours),
                other => *other = Value::Array(ours),
            }
        }
    }
    settings
}

/// `settings` without engram's hook commands; a group or an event left empty goes too, and
/// `hooks` itself when nothing is left in it.
fn without_hooks(mut settings: Value) -> Value {
    let Some(object) = settings.as_object_mut() else {
        return settings;
    };
    if let Some(Value::Object(events)) = object.get_mut("hooks") {
        for event in EVENTS {
            let Some(Value::Array(groups)) = events.get_mut(event) else {
                continue;
            };
            for group in groups.iter_mut() {
                if let Some(Value::Array(commands)) = group.get_mut("hooks") {
                    commands.retain(|hook| !is_engrams(hook));
                }
            }
            groups.retain(|group| {
                !matches!(group.get("hooks"), Some(Value::Array(commands)) if commands.is_empty())
            });
            if groups.is_empty() {
                events.remove(event);
            }
        }
        if events.is_empty() {
            object.remove("hooks");
        }
    }
    settings
}

/// Whether a hook command is one engram installed: it runs engram's `brief --hook` or
/// `recall --hook`.
fn is_engrams(hook: &Value) -> bool {
    let command = hook.get("command").and_then(Value::as_str).unwrap_or("");
    command.contains("engram")
        && (command.contains(" brief --hook") || command.contains(" recall --hook"))
}

/// `word` quoted for a POSIX shell (Claude Code runs hook commands with `sh -c`).
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && (word.chars()).all(|c| c.is_ascii_alphanumeric() || "-_./:@=,+".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Where the settings file is copied before it changes: beside it, with the time.
fn backup_path(path: &Path) -> std::path::PathBuf {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S");
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".engram-backup-{stamp}"));
    path.with_file_name(name)
}

/// Backups of a settings file kept beside it: the newest few, so that installing and
/// uninstalling again and again does not fill `.claude/`.
const BACKUPS_KEPT: usize = 3;

/// Removes all but the newest `keep` backups of `path` (their names sort by time); a backup
/// that cannot be removed is left, said on stderr.
fn prune_backups(path: &Path, keep: usize) {
    let Some(directory) = path.parent() else {
        return;
    };
    let mut prefix = path.file_name().unwrap_or_default().to_os_string();
    prefix.push(".engram-backup-");
    let prefix = prefix.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir(if directory.as_os_str().is_empty() {
        Path::new(".")
    } else {
        directory
    }) else {
        return;
    };
    let mut backups: Vec<std::path::PathBuf> = (entries.flatten())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| entry.path())
        .collect();
    backups.sort();
    let excess = backups.len().saturating_sub(keep);
    for old in &backups[..excess] {
        if let Err(error) = std::fs::remove_file(old) {
            eprintln!("could not remove the old backup {}: {error}", old.display());
        }
    }
}

/// Writes `text` to `path` through a file beside it renamed over it, so that a reader never
/// sees half a file; creates the directory (`.claude/`) when missing.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut partial = path.as_os_str().to_os_string();
    partial.push(".engram-partial");
    std::fs::write(&partial, text).with_context(|| format!("writing {}", path.display()))?;
    // The file keeps the permissions it had.
    if let Ok(metadata) = std::fs::metadata(path) {
        std::fs::set_permissions(&partial, metadata.permissions())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_newest_backups_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.local.json");
        std::fs::write(&settings, "{}").unwrap();
        for stamp in [
            "20260101T000001",
            "20260101T000002",
            "20260101T000003",
            "20260101T000004",
            "20260101T000005",
        ] {
            std::fs::write(
                dir.path()
                    .join(format!("settings.local.json.engram-backup-{stamp}")),
                "{}",
            )
            .unwrap();
        }
        std::fs::write(
            dir.path().join("other.json.engram-backup-20250101T000000"),
            "{}",
        )
        .unwrap();
        prune_backups(&settings, 3);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "other.json.engram-backup-20250101T000000",
                "settings.local.json",
                "settings.local.json.engram-backup-20260101T000003",
                "settings.local.json.engram-backup-20260101T000004",
                "settings.local.json.engram-backup-20260101T000005",
            ]
        );
    }

    use super::*;

    fn args() -> HooksArgs {
        HooksArgs {
            workspace: Some("my project".into()),
            install: true,
            uninstall: false,
            settings: ".claude/settings.local.json".into(),
            timeout: 5,
            limit: 5,
            url: Some("http://127.0.0.1:8765".into()),
        }
    }

    #[test]
    fn hook_commands_are_quoted_for_the_shell() {
        assert_eq!(shell_quote("demo"), "demo");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        let hooks = hooks("/opt/my tools/engram", &args(), None);
        let recall = hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert_eq!(
            recall,
            "'/opt/my tools/engram' recall --hook --workspace 'my project' --timeout 4s \
             --url http://127.0.0.1:8765 --limit 5"
        );
        assert_eq!(hooks["hooks"]["SessionStart"][0]["hooks"][0]["timeout"], 5);
    }

    #[test]
    fn installing_keeps_other_settings_and_hooks_and_replaces_engrams_own() {
        let existing = json!({
            "model": "opus",
            "hooks": {
                "UserPromptSubmit": [{ "hooks": [{ "type": "command", "command": "lint.sh" }] }],
                "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "guard.sh" }] }]
            }
        });
        let ours = hooks("/usr/bin/engram", &args(), None);
        let once = with_hooks(without_hooks(existing.clone()), &ours);
        let twice = with_hooks(without_hooks(once.clone()), &ours);
        assert_eq!(once, twice, "installing again changes nothing");
        assert_eq!(once["model"], "opus");
        assert_eq!(once["hooks"]["PreToolUse"], existing["hooks"]["PreToolUse"]);
        let prompt_hooks = once["hooks"]["UserPromptSubmit"].as_array().unwrap();
        assert_eq!(prompt_hooks.len(), 2);
        assert_eq!(prompt_hooks[0]["hooks"][0]["command"], "lint.sh");
        assert_eq!(once["hooks"]["SessionStart"].as_array().unwrap().len(), 1);
        assert_eq!(
            without_hooks(once),
            existing,
            "uninstalling restores the rest"
        );
        assert_eq!(without_hooks(with_hooks(json!({}), &ours)), json!({}));
    }
}
