use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::checks::{NameKind, entropy, name_kind};
use super::*;

/// Every kind, to check labels.
const KINDS: &[SecretKind] = &[
    SecretKind::AwsAccessKey,
    SecretKind::AwsSecretKey,
    SecretKind::GoogleApiKey,
    SecretKind::AzureStorageKey,
    SecretKind::GithubToken,
    SecretKind::GitlabToken,
    SecretKind::BitbucketAppPassword,
    SecretKind::NpmToken,
    SecretKind::PypiToken,
    SecretKind::SlackToken,
    SecretKind::SlackWebhook,
    SecretKind::DiscordToken,
    SecretKind::DiscordWebhook,
    SecretKind::TelegramBotToken,
    SecretKind::StripeKey,
    SecretKind::OpenaiKey,
    SecretKind::AnthropicKey,
    SecretKind::TwilioKey,
    SecretKind::SendgridKey,
    SecretKind::MailgunKey,
    SecretKind::HuggingfaceToken,
    SecretKind::PrivateKey,
    SecretKind::Jwt,
    SecretKind::UrlPassword,
    SecretKind::AuthHeader,
    SecretKind::AssignedSecret,
    SecretKind::Password,
];

/// A shortened view of a text for failure messages.
fn clip(text: &str) -> String {
    let end = (0..=text.len().min(160)).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    text[..end].replace('\n', "\\n")
}

/// What `find_secrets` says about `text`, for failure messages.
fn describe(text: &str, found: &[SecretMatch]) -> String {
    let parts: Vec<String> = (found.iter())
        .map(|m| format!("{} {:?} {:?}", m.kind, m.range, clip(&text[m.range.clone()])))
        .collect();
    parts.join("; ")
}

#[test]
fn labels_are_distinct_kebab_case_and_every_kind_is_in_the_corpus() {
    let mut labels: Vec<&str> = KINDS.iter().map(|k| k.label()).collect();
    for label in &labels {
        assert!(label.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{label}");
    }
    labels.sort_unstable();
    labels.dedup();
    assert_eq!(labels.len(), KINDS.len());
    let covered: Vec<&str> = secrets_corpus().map(|(label, _)| label).collect();
    for label in labels {
        assert!(covered.contains(&label), "no corpus line for {label}");
    }
    assert!(covered.len() >= 60, "{} corpus secrets", covered.len());
}

#[test]
fn every_corpus_secret_is_found_with_its_label_and_redacted() {
    let mut failures = String::new();
    for (label, text) in secrets_corpus() {
        let found = find_secrets(&text);
        if found.len() != 1 || found[0].kind.label() != label {
            let _ = writeln!(failures, "expected {label}, found [{}] in {:?}", describe(&text, &found), clip(&text));
            continue;
        }
        let secret = &text[found[0].range.clone()];
        if first_secret(&text).as_ref() != found.first() {
            let _ = writeln!(failures, "first_secret differs from find_secrets in {:?}", clip(&text));
        }
        let redacted = redact(&text);
        let marker = format!("[redacted: {label}]");
        // No part of the secret is left: no 10-byte window of it survives the redaction.
        let window = secret.len().min(10);
        let leaked = (0..=secret.len() - window)
            .filter(|&i| secret.is_char_boundary(i) && secret.is_char_boundary(i + window))
            .map(|i| &secret[i..i + window])
            .find(|part| redacted.contains(part));
        if !redacted.contains(&marker) || leaked.is_some() || !find_secrets(&redacted).is_empty() {
            let _ = writeln!(failures, "{label}: redacted to {:?} (leaked {leaked:?})", clip(&redacted));
        }
    }
    assert!(failures.is_empty(), "corpus secrets missed or mislabelled:\n{failures}");
}

#[test]
fn the_ordinary_corpus_has_no_findings() {
    let mut failures = String::new();
    let mut lines = 0;
    for text in ordinary_corpus() {
        lines += 1;
        let found = find_secrets(text);
        if !found.is_empty() || first_secret(text).is_some() {
            let _ = writeln!(failures, "{:?}: {}", clip(text), describe(text, &found));
        }
        assert!(matches!(redact(text), Cow::Borrowed(t) if t == text));
    }
    assert!(failures.is_empty(), "ordinary lines flagged:\n{failures}");
    assert!(lines >= 150, "{lines} ordinary lines");
}

#[test]
fn redact_borrows_when_nothing_is_found() {
    for text in ["", "short", "an ordinary sentence about keys and tokens", "password: <set me>"] {
        assert!(matches!(redact(text), Cow::Borrowed(t) if t == text), "{text}");
    }
}

#[test]
fn redact_replaces_each_secret_in_place() {
    let text = "a ghp_R4nd0mT0k3nW1thThirtySixCharsXyZ0123 b postgres://u:Xq7vP2mK9tLw@db/x c";
    let found = find_secrets(text);
    assert_eq!(found.iter().map(|m| m.kind).collect::<Vec<_>>(), [SecretKind::GithubToken, SecretKind::UrlPassword]);
    assert_eq!(redact(text), "a [redacted: github-token] b postgres://u:[redacted: url-password]@db/x c");
}

/// Ordinary corpus lines repeated up to `size` bytes.
fn ordinary_text(size: usize) -> String {
    let mut text = String::with_capacity(size + 4096);
    for line in std::iter::repeat_with(ordinary_corpus).flatten() {
        if text.len() + line.len() + 1 > size {
            break;
        }
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// Pseudo-random bytes (xorshift), reproducible.
fn noise(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[3]
        })
        .collect()
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0_u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            let pad = i > chunk.len();
            out.push(if pad { '=' } else { char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]) });
        }
    }
    out
}

/// `f(text)`'s time, checked against a generous bound (debug builds, a shared machine).
fn timed<T>(what: &str, text: &str, f: impl Fn(&str) -> T) -> T {
    let start = Instant::now();
    let out = f(text);
    let took = start.elapsed();
    println!("{what}: {} bytes in {took:?}", text.len());
    assert!(took < Duration::from_secs(2), "{what} took {took:?}");
    out
}

#[test]
fn a_64_kib_ordinary_text_has_no_findings() {
    let text = ordinary_text(64 * 1024);
    let found = timed("ordinary 64 KiB", &text, find_secrets);
    assert!(found.is_empty(), "{}", describe(&text, &found));
    assert!(first_secret(&text).is_none());
}

#[test]
fn a_64_kib_base64_blob_is_no_secret() {
    for seed in [1, 2, 3] {
        let mut image = b"\x89PNG\r\n\x1a\n".to_vec();
        image.extend(noise(48 * 1024, 0x9e37_79b9_7f4a_7c15 ^ seed));
        let data = base64(&image);
        let uri = format!("<img src=\"data:image/png;base64,{data}\">");
        for text in [&data, &uri] {
            let found = timed("base64 64 KiB", text, find_secrets);
            assert!(found.is_empty(), "{}", describe(text, &found));
        }
        let wrapped: Vec<&str> = data.as_bytes().chunks(76).map(|l| std::str::from_utf8(l).unwrap()).collect();
        let mime = wrapped.join("\n");
        assert!(find_secrets(&mime).is_empty());
    }
}

#[test]
fn a_secret_deep_in_a_long_text_is_found_at_its_byte_range() {
    let before = ordinary_text(40 * 1024);
    let secret = "xoxb-123456789012-1234567890123-Qm8sT3kP9vX2cL7nR4wY6zB1";
    let text = format!("{before}The bot uses {secret} for posting.\n{}", ordinary_text(20 * 1024));
    let start = before.len() + "The bot uses ".len();
    let expected = SecretMatch { kind: SecretKind::SlackToken, range: start..start + secret.len() };
    assert_eq!(find_secrets(&text), [expected.clone()]);
    assert_eq!(first_secret(&text), Some(expected));
    // And among multi-byte text: ranges stay on character boundaries.
    let text = format!("Schlüssel für Zoë — ключ: {secret} ✓");
    let found = find_secrets(&text);
    assert_eq!(found.len(), 1);
    assert_eq!(&text[found[0].range.clone()], secret);
}

#[test]
fn adversarial_texts_stay_linear() {
    let cases = [
        "key=".repeat(16 * 1024),
        "password: a".repeat(6 * 1024),
        "-----BEGIN PRIVATE KEY-----\n".repeat(2 * 1024),
        "https://a:".repeat(6 * 1024),
        "eyJ".repeat(20 * 1024) + "." + &"eyJ".repeat(1000),
        "AKIA".repeat(16 * 1024),
        "a".repeat(64 * 1024),
        format!("token = {}", "Ab1".repeat(20 * 1024)),
    ];
    for text in &cases {
        timed("adversarial", text, find_secrets);
    }
}

#[test]
fn overlapping_rules_keep_the_earlier_then_the_longer_then_the_specific() {
    // The generic rule covers the same value as the GitHub rule: the specific label wins.
    let text = "GITHUB_TOKEN=ghp_R4nd0mT0k3nW1thThirtySixCharsXyZ0123";
    let found = find_secrets(text);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, SecretKind::GithubToken);
    // A JWT in an Authorization header is a JWT.
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg";
    assert_eq!(find_secrets(&format!("Authorization: Bearer {jwt}"))[0].kind, SecretKind::Jwt);
}

#[test]
fn glued_tokens_are_not_tokens() {
    for text in [
        "xAKIAVQJXXVBOTHD0WTFL",
        "AKIAVQJXXVBOTHD0WTFLX",
        "ghp_Z9kWrKnR4Ae28UZ5ErtPpwZub4Q60SSKdi1eX",
        "restore-key-3f0468e068a29301ffdb801678332777",
        "task-Aa5ZBwvB2fAcO7DU45PkCp753IVDsMdRuD7ZAa5ZBwvB2fAc",
    ] {
        assert!(find_secrets(text).is_empty(), "{text}");
    }
}

#[test]
fn names_say_what_their_values_are() {
    for (name, kind) in [
        ("api_key", Some(NameKind::Secret)),
        ("apiKey", Some(NameKind::Secret)),
        ("APIKey", Some(NameKind::Secret)),
        ("X-Api-Key", Some(NameKind::Secret)),
        ("GITHUB_TOKEN", Some(NameKind::Secret)),
        ("id_token", Some(NameKind::Secret)),
        ("client_secret", Some(NameKind::Secret)),
        ("DB_PASSWORD", Some(NameKind::Password)),
        ("spring.datasource.password", Some(NameKind::Password)),
        ("passwd", Some(NameKind::Password)),
        ("public_key", None),
        ("key_id", None),
        ("max_tokens", None),
        ("token_count", None),
        ("monkey", None),
        ("author", None),
        ("tokenizer", None),
        ("passport", None),
        ("sort_key", None),
        ("password_hash", None),
    ] {
        assert_eq!(name_kind(name), kind, "{name}");
    }
}

#[test]
fn entropy_counts_bits_per_character() {
    assert!(entropy("aaaaaaaa").abs() < 1e-9);
    assert!((entropy("abababab") - 1.0).abs() < 1e-9);
    assert!((entropy("0123456789abcdef") - 4.0).abs() < 1e-9);
}

#[test]
fn tmp_dump() {
    for (label, text) in secrets_corpus() {
        for m in find_secrets(&text) {
            let s = &text[m.range.clone()];
            let before = &text[m.range.start.saturating_sub(12)..m.range.start];
            let after_end = (m.range.end + 12).min(text.len());
            println!("{label:24} {:?} <<{}>> {:?}", clip(before), clip(s), clip(&text[m.range.end..after_end]));
        }
    }
}

#[test]
fn tmp_bench() {
    let text = ordinary_text(64 * 1024);
    let blob = base64(&noise(48 * 1024, 7));
    for (name, t) in [("ordinary", &text), ("blob", &blob)] {
        let start = Instant::now();
        let n = super::patterns::candidate_rules(t).count();
        println!("{name}: set {:?} ({n} candidates)", start.elapsed());
        let start = Instant::now();
        let n = super::patterns::candidate_rules(t).count();
        println!("{name}: set again {:?} ({n} candidates)", start.elapsed());
        super::patterns::bench_each(t);
    }
}

#[test]
fn tmp_scaling() {
    for unit in ["key=", "password: a", "-----BEGIN PRIVATE KEY-----\n", "x token = Ab1", "https://a:", "a.eyJbbbbbbbbbb.eyJcccccccccc.", "k: Ab1Cd2Ef3Gh4Ij5Kl6 "] {
        for kib in [16, 32, 64, 128] {
            let text = unit.repeat(kib * 1024 / unit.len());
            let start = Instant::now();
            let n = find_secrets(&text).len();
            println!("{unit:?} {kib} KiB: {:?} ({n})", start.elapsed());
        }
    }
}

#[test]
fn tmp_repo_scan() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let p = entry.path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name == "target" || name.starts_with('.') || name == "corpus" { continue; }
            if p.is_dir() { walk(&p, out); } else { out.push(p); }
        }
    }
    let mut files = Vec::new();
    let root = std::path::PathBuf::from(std::env::var("SCAN_ROOT").unwrap_or_else(|_| format!("{}/../..", env!("CARGO_MANIFEST_DIR"))));
    walk(&root, &mut files);
    let (mut lines, mut bytes) = (0, 0);
    let start = Instant::now();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        if text.len() > 4_000_000 { continue; }
        bytes += text.len();
        for line in text.lines() {
            lines += 1;
            for m in find_secrets(line) {
                println!("HIT {} {}: {:?} in {:?}", f.display(), m.kind, &line[m.range.clone()], clip(line));
            }
        }
    }
    println!("scanned {lines} lines, {bytes} bytes in {:?}", start.elapsed());
}
