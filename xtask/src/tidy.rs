//! The layering rules of ARCHITECTURE.md, checked against the crates' manifests (as
//! rust-analyzer's tidy tests check theirs): `cargo metadata` lists each workspace crate's
//! normal dependencies, and each crate may use only what its layer allows. `deny.toml`'s
//! `wrappers` check the same from the other side (who may use a driver). ARCHITECTURE.md holds
//! only what stays true, so it carries no measured figure (those live in BENCHMARKS.md).

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::{BTreeMap, HashSet};
    use std::process::Command;

    use serde_json::Value;

    /// Each workspace crate's normal (not dev, not build) dependencies, by crate name.
    fn dependencies() -> BTreeMap<String, Vec<String>> {
        let output = Command::new(env!("CARGO"))
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(crate::workspace_root())
            .output()
            .expect("running cargo metadata");
        assert!(output.status.success(), "{output:?}");
        let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
        (metadata["packages"].as_array().unwrap().iter())
            .map(|package| {
                let normal = (package["dependencies"].as_array().unwrap().iter())
                    .filter(|d| d["kind"].is_null())
                    .map(|d| d["name"].as_str().unwrap().to_owned())
                    .collect();
                (package["name"].as_str().unwrap().to_owned(), normal)
            })
            .collect()
    }

    /// A `rust-version` as numbers (`"1.92"` → `[1, 92]`, `"1.90.1"` → `[1, 90, 1]`).
    fn version(text: &str) -> Vec<u64> {
        text.split('.').map(|part| part.parse().unwrap()).collect()
    }

    /// The workspace's declared `rust-version` is true: no crate it builds, its own or a
    /// dependency in `Cargo.lock`, needs a newer Rust (`cargo install` said "refinery v0.10.0
    /// (requires Rust 1.92)" while the workspace declared 1.90).
    #[test]
    fn the_declared_rust_version_covers_every_dependency() {
        let output = Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--offline", "--locked"])
            .current_dir(crate::workspace_root())
            .output()
            .expect("running cargo metadata");
        assert!(output.status.success(), "{output:?}");
        let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
        let packages = metadata["packages"].as_array().unwrap();
        let members: Vec<&str> = (metadata["workspace_members"].as_array().unwrap().iter())
            .filter_map(Value::as_str)
            .collect();
        let declared = (packages.iter())
            .filter(|p| members.contains(&p["id"].as_str().unwrap()))
            .map(|p| {
                version(
                    p["rust_version"]
                        .as_str()
                        .expect("every crate declares one"),
                )
            })
            .min()
            .unwrap();
        let needs: Vec<String> = (packages.iter())
            .filter(|p| {
                p["rust_version"]
                    .as_str()
                    .is_some_and(|v| version(v) > declared)
            })
            .map(|p| {
                let field = |key: &str| p[key].as_str().unwrap_or_default().to_owned();
                format!(
                    "{} {} (Rust {})",
                    field("name"),
                    field("version"),
                    field("rust_version")
                )
            })
            .collect();
        assert!(
            needs.is_empty(),
            "the rust-version in Cargo.toml ({declared:?}) is older than these need: {needs:?}"
        );
    }

    /// Crates no layer but its own may depend on, and the layers that may.
    const OWNED: [(&str, &[&str]); 10] = [
        ("tokio-postgres", &["engram-pg"]),
        ("deadpool-postgres", &["engram-pg"]),
        ("pgvector", &["engram-pg"]),
        ("rusqlite", &["engram-sqlite"]),
        ("sqlite-vec", &["engram-sqlite"]),
        ("candle-core", &["engram-embed"]),
        ("ollama-rs", &["engram-embed"]),
        ("rmcp", &["engram-mcp", "engram", "xtask"]),
        ("axum", &["engram", "engram-embed"]),
        ("clap", &["engram", "xtask"]),
    ];

    #[test]
    fn every_crate_keeps_to_its_layer() {
        let crates = dependencies();
        let ours = |deps: &[String]| -> Vec<String> {
            deps.iter()
                .filter(|d| d.starts_with("engram"))
                .cloned()
                .collect()
        };
        // The domain depends on nothing of ours; each library crate on the domain alone.
        assert_eq!(ours(&crates["engram-domain"]), Vec::<String>::new());
        for library in ["engram-pg", "engram-sqlite", "engram-embed", "engram-mcp"] {
            assert_eq!(ours(&crates[library]), ["engram-domain"], "{library}");
        }
        for (dependency, allowed) in OWNED {
            for (name, deps) in &crates {
                if deps.iter().any(|d| d == dependency) {
                    assert!(
                        allowed.contains(&name.as_str()),
                        "{name} depends on {dependency}, which belongs to {allowed:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_domain_does_no_io() {
        let crates = dependencies();
        for forbidden in [
            "tokio-postgres",
            "rusqlite",
            "rmcp",
            "axum",
            "reqwest",
            "ureq",
            "hyper",
            "http",
        ] {
            assert!(
                !crates["engram-domain"].iter().any(|d| d == forbidden),
                "engram-domain depends on {forbidden}"
            );
        }
    }

    /// Units a measured figure is written in: a number followed by one of them (`22 ms`,
    /// `2GB`, `40 %`) is a figure.
    const UNITS: &str = "ns µs us ms s sec seconds minutes hours B bytes KB MB GB TB KiB MiB GiB \
                         % × x obs/s calls/s vectors/s";

    /// The figures (`number unit`) in `text`, with their line numbers.
    fn figures(text: &str) -> Vec<(usize, String)> {
        let mut found = Vec::new();
        for (line_number, line) in text.lines().enumerate() {
            let words: Vec<&str> = line
                .split_whitespace()
                .map(|w| w.trim_matches(|c: char| "()[]{},;:`*_\"'".contains(c)))
                .collect();
            for (i, word) in words.iter().enumerate() {
                let digits = word.trim_end_matches(|c: char| !c.is_ascii_digit());
                if digits.is_empty()
                    || !digits.starts_with(|c: char| c.is_ascii_digit())
                    || !digits
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
                {
                    continue;
                }
                let attached = &word[digits.len()..];
                let unit = if attached.is_empty() {
                    words.get(i + 1).copied().unwrap_or_default()
                } else {
                    attached
                };
                if UNITS.split_whitespace().any(|u| u == unit) {
                    found.push((line_number + 1, format!("{digits} {unit}")));
                }
            }
        }
        found
    }

    #[test]
    fn figures_are_found_in_any_spelling() {
        assert_eq!(
            figures("took 22 ms, (2GB) and 40 %;\nat 5,456 obs/s, 384 floats, MCP 2025-06-18"),
            vec![
                (1, "22 ms".to_string()),
                (1, "2 GB".to_string()),
                (1, "40 %".to_string()),
                (2, "5,456 obs/s".to_string())
            ]
        );
    }

    #[test]
    fn the_architecture_carries_no_measured_figure() {
        let text = std::fs::read_to_string(crate::workspace_root().join("ARCHITECTURE.md"))
            .expect("reading ARCHITECTURE.md");
        let found = figures(&text);
        assert!(
            found.is_empty(),
            "ARCHITECTURE.md says what stays true; measured figures go stale and belong in \
             BENCHMARKS.md (name the constant or the benchmark instead): {found:?}"
        );
    }

    /// Every file git tracks in the workspace, as paths relative to its root.
    pub(crate) fn source_files() -> Vec<String> {
        let listed = Command::new("git")
            .arg("ls-files")
            .current_dir(crate::workspace_root())
            .output()
            .expect("running git ls-files");
        assert!(listed.status.success(), "git ls-files failed");
        (String::from_utf8_lossy(&listed.stdout).lines())
            .map(str::to_owned)
            .collect()
    }

    /// Whether `word` matches `pattern`, where `*` stands for any run of characters.
    fn matches(pattern: &str, word: &str) -> bool {
        let parts: Vec<&str> = pattern.split('*').collect();
        if parts.len() == 1 {
            return pattern == word;
        }
        let (first, last) = (parts[0], parts[parts.len() - 1]);
        if !word.starts_with(first) || !word[first.len()..].ends_with(last) {
            return false;
        }
        let mut rest = &word[first.len()..word.len() - last.len()];
        for middle in &parts[1..parts.len() - 1] {
            match rest.find(middle) {
                Some(at) => rest = &rest[at + middle.len()..],
                None => return false,
            }
        }
        true
    }

    /// The backticked names in `text` that name no file and no Rust item of the workspace:
    /// file paths (by their last parts) and Rust paths, types and snake_case names (by their
    /// last segment, `*` a wildcard) are looked up; other spans (flags, JSON, SQL) are not.
    fn missing_names(text: &str, files: &[String], words: &HashSet<String>) -> Vec<String> {
        const EXTENSIONS: [&str; 9] = [
            ".rs", ".sql", ".md", ".toml", ".js", ".json", ".py", ".html", ".css",
        ];
        // Files that live outside the repository: the build's output and a model's files.
        const ELSEWHERE: [&str; 3] = ["target/", "config.json", "tokenizer.json"];
        let mut missing = Vec::new();
        for span in text.split('`').skip(1).step_by(2) {
            let name = span.trim_end_matches("()").trim_end_matches('!');
            if name.is_empty()
                || name.contains(char::is_whitespace)
                || name.contains("://")
                || name.starts_with("../")
                || ELSEWHERE.contains(&name)
            {
                continue;
            }
            let is_file = EXTENSIONS.iter().any(|e| name.ends_with(e)) || name.ends_with('/');
            if is_file {
                let found = (files.iter()).any(|file| {
                    let file = format!("/{file}");
                    if name.ends_with('/') {
                        return file.contains(&format!("/{name}"));
                    }
                    // The name's last parts, `*` a wildcard within one part.
                    let (parts, named) = (file.rsplit('/'), name.rsplit('/'));
                    let mut pairs = parts.zip(named.clone());
                    named.count() < file.split('/').count()
                        && pairs.all(|(part, pattern)| matches(pattern, part))
                });
                if !found {
                    missing.push(span.to_owned());
                }
                continue;
            }
            let rust_like = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_:*".contains(c))
                && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && (name.contains("::")
                    || name.contains('_')
                    || (name.starts_with(|c: char| c.is_ascii_uppercase())
                        && name.chars().any(|c| c.is_ascii_lowercase())));
            if !rust_like {
                continue;
            }
            let last = name.rsplit("::").next().unwrap_or(name);
            if last.is_empty() || !(words.iter()).any(|word| matches(last, word)) {
                missing.push(span.to_owned());
            }
        }
        missing.sort();
        missing.dedup();
        missing
    }

    #[test]
    fn names_are_looked_up_as_files_or_rust_items() {
        let files = vec![
            "crates/a/src/grouping.rs".to_owned(),
            "xtask/data/x.json".to_owned(),
        ];
        let words: HashSet<String> = ["Memory", "call", "properties_of_the_read_tools_hold"]
            .map(String::from)
            .into();
        let text = "`grouping.rs`, `a/src/grouping.rs`, `data/`, `Memory::call`, `gr*.rs`, \
                    `properties_of_the_*_tools_hold`, `--drain`, `{\"a\": 1}`, `nodes::gone`, \
                    `split.rs`, `Gone`, `https://`, `target/`, `JSON`";
        assert_eq!(
            missing_names(text, &files, &words),
            ["Gone", "nodes::gone", "split.rs"]
        );
    }

    #[test]
    fn every_name_in_the_architecture_exists() {
        let root = crate::workspace_root();
        let text =
            std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("reading ARCHITECTURE.md");
        let files = source_files();
        let mut words = HashSet::new();
        for file in files.iter().filter(|f| {
            [".rs", ".sql", ".toml", ".js"]
                .iter()
                .any(|e| f.ends_with(e))
        }) {
            let source = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            for word in source.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
                if !word.is_empty() {
                    words.insert(word.to_owned());
                }
            }
        }
        let missing = missing_names(&text, &files, &words);
        assert!(
            missing.is_empty(),
            "ARCHITECTURE.md names what the workspace does not hold (renamed or gone?): \
             {missing:?}"
        );
    }
}
