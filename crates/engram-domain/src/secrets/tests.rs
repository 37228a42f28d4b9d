use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::checks::entropy;
use super::values::{NameKind, name_kind};
use super::*;

/// Every kind, to check labels.
const KINDS: &[SecretKind] = &[
    SecretKind::AwsAccessKey,
    SecretKind::AwsSecretKey,
    SecretKind::GoogleApiKey,
    SecretKind::GoogleOauthToken,
    SecretKind::AzureStorageKey,
    SecretKind::AzureSasToken,
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
    let end = (0..=text.len().min(160))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    text[..end].replace('\n', "\\n")
}

/// What `find_secrets` says about `text`, for failure messages.
fn describe(text: &str, found: &[SecretMatch]) -> String {
    let parts: Vec<String> = (found.iter())
        .map(|m| {
            format!(
                "{} {:?} {:?}",
                m.kind,
                m.range,
                clip(&text[m.range.clone()])
            )
        })
        .collect();
    parts.join("; ")
}

#[test]
fn labels_are_distinct_kebab_case_and_every_kind_is_in_the_corpus() {
    let mut labels: Vec<&str> = KINDS.iter().map(|k| k.label()).collect();
    for label in &labels {
        assert!(
            label.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
            "{label}"
        );
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
            let _ = writeln!(
                failures,
                "expected {label}, found [{}] in {:?}",
                describe(&text, &found),
                clip(&text)
            );
            continue;
        }
        let secret = &text[found[0].range.clone()];
        if first_secret(&text).as_ref() != found.first() {
            let _ = writeln!(
                failures,
                "first_secret differs from find_secrets in {:?}",
                clip(&text)
            );
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
            let _ = writeln!(
                failures,
                "{label}: redacted to {:?} (leaked {leaked:?})",
                clip(&redacted)
            );
        }
    }
    assert!(
        failures.is_empty(),
        "corpus secrets missed or mislabelled:\n{failures}"
    );
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
    for text in [
        "",
        "short",
        "an ordinary sentence about keys and tokens",
        "password: <set me>",
    ] {
        assert!(
            matches!(redact(text), Cow::Borrowed(t) if t == text),
            "{text}"
        );
    }
}

#[test]
fn redact_replaces_each_secret_in_place() {
    let text = "a ghp_R4nd0mT0k3nW1thThirtySixCharsXyZ0123 b postgres://u:Xq7vP2mK9tLw@db/x c";
    let found = find_secrets(text);
    assert_eq!(
        found.iter().map(|m| m.kind).collect::<Vec<_>>(),
        [SecretKind::GithubToken, SecretKind::UrlPassword]
    );
    assert_eq!(
        redact(text),
        "a [redacted: github-token] b postgres://u:[redacted: url-password]@db/x c"
    );
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
        let n = chunk
            .iter()
            .enumerate()
            .fold(0_u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            let pad = i > chunk.len();
            out.push(if pad {
                '='
            } else {
                char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63])
            });
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
        let wrapped: Vec<&str> = data
            .as_bytes()
            .chunks(76)
            .map(|l| std::str::from_utf8(l).unwrap())
            .collect();
        let mime = wrapped.join("\n");
        assert!(find_secrets(&mime).is_empty());
    }
}

#[test]
fn a_secret_deep_in_a_long_text_is_found_at_its_byte_range() {
    let before = ordinary_text(40 * 1024);
    let secret = "xoxb-123456789012-1234567890123-Qm8sT3kP9vX2cL7nR4wY6zB1";
    let text = format!(
        "{before}The bot uses {secret} for posting.\n{}",
        ordinary_text(20 * 1024)
    );
    let start = before.len() + "The bot uses ".len();
    let expected = SecretMatch {
        kind: SecretKind::SlackToken,
        range: start..start + secret.len(),
    };
    assert_eq!(find_secrets(&text), std::slice::from_ref(&expected));
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
        format!(
            "token = {}",
            (0..20_000)
                .filter_map(|i| char::from_u32(0x4e00 + i))
                .collect::<String>()
        ),
        "token=Ab1Cd2Ef3Gh4Ij5Kl6Mn7 ".repeat(2 * 1024),
        "-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED \\x\\".repeat(1024),
        "-----BEGIN PRIVATE KEY----- ".repeat(1024) + "-----END" + &"x".repeat(32 * 1024),
        // Base64 runs of the longest decoded, each of text full of anchors.
        vec![base64("key=AKIA".repeat(384).as_bytes()); 16].join(" "),
        "eyJhbGciOiJIUzI1NiJ9 . ".repeat(3 * 1024),
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
    assert_eq!(
        find_secrets(&format!("Authorization: Bearer {jwt}"))[0].kind,
        SecretKind::Jwt
    );
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
fn random_texts_keep_the_contract() {
    const PIECES: &[&str] = &[
        "key",
        "token",
        "Secret",
        "password",
        "_",
        "-",
        "=",
        ": ",
        ":",
        "://",
        "@",
        "\"",
        "'",
        " ",
        "\n",
        "\\n",
        "\\",
        ".",
        "/",
        "+",
        "%2F",
        "$",
        "{{",
        "}}",
        "(",
        "é",
        "ключ",
        "✓",
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "-----",
        "AKIA",
        "ghp_",
        "eyJ",
        "hf_",
        "sk-",
        "xoxb-",
        "SG.",
        "bot",
        "12345678",
        "Ab1Cd2Ef3Gh4",
        "Qm8sT3kP9vX2",
        "MIIEvQIBADANBgkqhkiG9w0B",
        "https://u:",
        "Authorization: Bearer ",
        "=>",
        "AA",
    ];
    let noise = noise(400_000, 0x2545_f491_4f6c_dd1d);
    let mut texts_with_findings = 0;
    for chunk in noise.chunks(40) {
        let text: String = chunk
            .iter()
            .map(|&b| PIECES[usize::from(b) % PIECES.len()])
            .collect();
        let found = find_secrets(&text);
        for pair in found.windows(2) {
            assert!(
                pair[0].range.end <= pair[1].range.start,
                "{text:?}: {found:?}"
            );
        }
        for m in &found {
            assert!(m.range.start < m.range.end, "{text:?}: {m:?}");
            assert!(text.is_char_boundary(m.range.start) && text.is_char_boundary(m.range.end));
        }
        assert_eq!(first_secret(&text).as_ref(), found.first(), "{text:?}");
        let redacted = redact(&text);
        assert_eq!(matches!(redacted, Cow::Borrowed(_)), found.is_empty());
        texts_with_findings += usize::from(!found.is_empty());
    }
    println!("{texts_with_findings} of 10000 random texts hold a finding");
    assert!(texts_with_findings > 100, "{texts_with_findings}");
}

/// `text` holds exactly `secret`, found as `kind` (by `find_secrets` and `first_secret`), and
/// redacts to the marker with no part of `secret` left; a failure message otherwise.
fn found_as(text: &str, kind: SecretKind, secret: &str) -> Option<String> {
    let found = find_secrets(text);
    let ranges: Vec<&str> = found.iter().map(|m| &text[m.range.clone()]).collect();
    if found.len() != 1 || found[0].kind != kind || ranges[0] != secret {
        return Some(format!(
            "expected {kind} {secret:?}, found [{}] in {text:?}",
            describe(text, &found)
        ));
    }
    if first_secret(text).as_ref() != found.first() {
        return Some(format!("first_secret differs in {text:?}"));
    }
    let redacted = redact(text);
    let marker = format!("[redacted: {kind}]");
    if !redacted.contains(&marker) || !find_secrets(&redacted).is_empty() {
        return Some(format!("{text:?} redacted to {redacted:?}"));
    }
    None
}

#[test]
fn disguised_and_less_common_credentials_are_found() {
    let ghp = "ghp_R4nd0mT0k3nW1thThirtySixCharsXyZ0123";
    let jwt = "eyJhbGciOiJIUzI1NiJ9 . eyJzdWIiOiIxMjM0NTY3ODkwIn0 . \
               SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
    let ya29 = "ya29.a0AfH6SMBx3kLmN0pQrStUvWxYz1234567890abcdefGHIJ";
    let okta = "00QCjAl4MlV-WPXM-ABCDEFGHIJKLMNOPQRSTUVWXYZ012345";
    let sig = "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A%3D";
    let sas = format!(
        "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&se=2026-01-01&sr=b&sp=r&sig={sig}"
    );
    let wrapped = base64(ghp.as_bytes());
    let wrapped_env = base64(format!("export GITHUB_TOKEN={ghp}\n").as_bytes());
    let url_safe = base64(format!("{ghp}??>>").as_bytes())
        .replace('+', "-")
        .replace('/', "_");
    let mut cases: Vec<(String, SecretKind, String)> = vec![
        // 1. A JWT with spaces around its dots, and with a tab or a space on one side only.
        (format!("token: {jwt}"), SecretKind::Jwt, jwt.to_owned()),
        (
            jwt.replace(" . ", "\t."),
            SecretKind::Jwt,
            jwt.replace(" . ", "\t."),
        ),
        (
            jwt.replace(" . ", " ."),
            SecretKind::Jwt,
            jwt.replace(" . ", " ."),
        ),
        // 2. A Bearer token with dots, with and without the header's name.
        (
            "Authorization: Bearer abc.def123.ghi456jkl789mno".into(),
            SecretKind::AuthHeader,
            "abc.def123.ghi456jkl789mno".into(),
        ),
        (
            "curl -H \"Bearer x7Kq.m3Zp9Lw2.Rt5vB8nY4cQ1\" https://api.example.com".into(),
            SecretKind::AuthHeader,
            "x7Kq.m3Zp9Lw2.Rt5vB8nY4cQ1".into(),
        ),
        // 3. A Google OAuth access token, bare, as a header (the specific kind wins) and a
        // service account's `ya29.c.` form.
        (
            format!("the token {ya29} expired"),
            SecretKind::GoogleOauthToken,
            ya29.into(),
        ),
        (
            format!("Authorization: Bearer {ya29}"),
            SecretKind::GoogleOauthToken,
            ya29.into(),
        ),
        (
            "ya29.c.b0AXv0zTPq7Lm2Rk9sWd4Fh6Jn8Bv3Xc5Zt1Gy".into(),
            SecretKind::GoogleOauthToken,
            "ya29.c.b0AXv0zTPq7Lm2Rk9sWd4Fh6Jn8Bv3Xc5Zt1Gy".into(),
        ),
        // 4. Okta's API token header, and in JSON.
        (
            format!("Authorization: SSWS {okta}"),
            SecretKind::AuthHeader,
            okta.into(),
        ),
        (
            format!("{{\"Authorization\": \"SSWS {okta}\"}}"),
            SecretKind::AuthHeader,
            okta.into(),
        ),
        // 5. An Azure SAS URL: its signature, percent-encoded or not.
        (sas.clone(), SecretKind::AzureSasToken, sig.into()),
        (
            sas.replace("%3D", "="),
            SecretKind::AzureSasToken,
            sig.replace("%3D", "="),
        ),
        // 7. A token wrapped in base64: standard, padded, URL-safe, in a sentence.
        (
            format!("echo {wrapped} | base64 -d"),
            SecretKind::GithubToken,
            wrapped,
        ),
        (
            format!("the secret is \"{wrapped_env}\""),
            SecretKind::GithubToken,
            wrapped_env,
        ),
        (
            format!("data={url_safe}"),
            SecretKind::GithubToken,
            url_safe,
        ),
    ];
    // 6. A known key split by an invisible character: each of them, anywhere in it.
    for invisible in ['\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}'] {
        let split = format!("AKIA{invisible}IOSFODNN7EXAMPLE");
        cases.push((
            format!("the key is {split}."),
            SecretKind::AwsAccessKey,
            split,
        ));
        let split = ghp.replacen("T0k3n", &format!("T0{invisible}k3{invisible}n"), 1);
        cases.push((
            format!("{invisible}{split}"),
            SecretKind::GithubToken,
            split,
        ));
    }
    let failures: Vec<String> = (cases.iter())
        .filter_map(|(text, kind, secret)| found_as(text, *kind, secret))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn look_alikes_of_the_disguised_shapes_are_not_found() {
    let prose = base64(b"The quick brown fox jumps over the lazy dog, and then naps.");
    let binary = base64(&noise(600, 7));
    let texts = [
        "Released v1.2.3 today, after v1.2.2 . v1.2.1 was yanked.",
        "version 10.4.17-rc.2 is on api.example.com and docs.example.com.",
        "the API moved from api.example.com to api.v2.example.com",
        "commit 3f2a9c1 fixed it",
        "commit 9b8e7d6f5a4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a (HEAD -> main)",
        "e.g. this . that . the other",
        "see crates/engram-domain/src/secrets/patterns.rs and /var/lib/engram/data.db",
        "C:\\Users\\alice\\AppData\\Roaming\\engram\\config.toml",
        "The session ended early; the key figures are on page 3.",
        "Authorization: Bearer settings.auth.access_token",
        "Authorization: Bearer config.v2.token",
        "Authorization: SSWS ${OKTA_API_TOKEN}",
        "Authorization: SSWS YOUR_OKTA_API_TOKEN",
        "Authorization: SSWS xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "Google access tokens start with ya29. and expire after an hour.",
        "ya29.YOUR_ACCESS_TOKEN_GOES_HERE_PLEASE",
        "ya29.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "https://example.com/search?q=rust&sig=abc123&page=2",
        "https://example.com/feed?sig=deadbeefdeadbeefdeadbeef",
        "The family emoji 👨\u{200D}👩\u{200D}👧 joins three people.",
        "a word\u{200B}break in very\u{200B}long\u{200B}words, and a \u{FEFF}BOM",
        &prose,
        &format!("the fixture is {prose}"),
        &binary,
    ];
    for text in texts {
        let found = find_secrets(text);
        assert!(
            found.is_empty(),
            "{}: {}",
            clip(text),
            describe(text, &found)
        );
        assert!(first_secret(text).is_none(), "{}", clip(text));
    }
    // The bound on the work: a base64 run over 4 KiB is data and is not decoded.
    let ghp = "ghp_R4nd0mT0k3nW1thThirtySixCharsXyZ0123";
    let long = base64(format!("{} {ghp}", "filler ".repeat(600)).as_bytes());
    assert!(long.len() > 4 * 1024 && find_secrets(&long).is_empty());
    let short = base64(format!("{} {ghp}", "filler ".repeat(400)).as_bytes());
    assert!(short.len() <= 4 * 1024);
    assert_eq!(find_secrets(&short)[0].kind, SecretKind::GithubToken);
}
