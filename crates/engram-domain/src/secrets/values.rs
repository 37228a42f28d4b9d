//! Assigned values, URL passwords and names: what makes `name = value` a secret, and what
//! makes a value a placeholder or a reference to where the secret is kept.

use std::collections::HashSet;
use std::sync::OnceLock;

use super::checks::{Classes, base64_decode, counts_up, entropy};

/// The entropy a random value of `len` characters reaches (about 99 % of random values, by
/// sampling): lower for short values, whose characters cannot all differ, and for hex, whose
/// alphabet is 16 letters; at most 3.5 bits per character, gitleaks' generic bar.
fn entropy_bar(len: usize, hex: bool) -> f64 {
    #[allow(clippy::cast_precision_loss, reason = "lengths are far below 2^52")]
    let log_len = (len as f64).log2();
    if hex {
        (0.65 * log_len).min(3.0)
    } else {
        (0.8 * log_len).min(3.5)
    }
}

/// Values that stand for a secret rather than being one, compared lower-cased; space-separated
/// (as are the lists below).
static PLACEHOLDERS: WordSet = WordSet::new(
    "password passwd pass pwd secret changeme example test testing none \
    null nil undefined empty todo tbd fixme redacted hidden masked dummy sample placeholder admin \
    root guest default demo foo bar foobar user username postgres mysql redis token key apikey \
    api_key letmein qwerty true false abcd 1234 12345 123456 anonymous anon nobody",
);

/// Parts of values that mark them as placeholders, compared lower-cased.
const PLACEHOLDER_PARTS: &str = "example placeholder changeme change_me change-me redacted your \
    xxxx **** .... dummy sample password passwd secret_here _here insert replace fixme todo < >";

/// Parts of values that refer to where a secret is kept: variables, templates, code.
const REFERENCE_PARTS: &str = "${ {{ }} $( #{ process.env environ getenv env( env[ env. secrets. \
    vault: ( [ :: ->";

/// Whether `value` is a placeholder or a reference, not a secret: `$VAR`, `${VAR}`, `%VAR%`,
/// `{{ x }}`, `<x>`, `process.env.X`, `os.environ[...]`, a dotted path such as
/// `settings.SECRET_KEY`, a Rust path's tail (`::NAME`, the name's `:` taken for a
/// separator), an `UPPER_SNAKE` variable name, `changeme`, `xxxx`, one repeated character,
/// six counting up (`123456`).
pub(super) fn placeholder(value: &str) -> bool {
    counts_up(value) || code_path(value) || stand_in(value)
}

/// [`placeholder`] but for counting up and dotted paths: what no credential is, whatever
/// names it (`$VAR`, `<token>`, `xxxx`, `YOUR_TOKEN`).
fn stand_in(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    let first = value.chars().next().unwrap_or('$');
    let distinct = {
        let mut chars: Vec<char> = lower.chars().collect();
        chars.sort_unstable();
        chars.dedup();
        chars.len()
    };
    matches!(
        first,
        '$' | '%' | '*' | '&' | '!' | '@' | '{' | '<' | '[' | '(' | '#' | '\\' | ':'
    ) || value.starts_with("__")
        || distinct <= 2
        || PLACEHOLDERS.has(&lower)
        || PLACEHOLDER_PARTS
            .split_ascii_whitespace()
            .any(|part| lower.contains(part))
        || REFERENCE_PARTS
            .split_ascii_whitespace()
            .any(|part| lower.contains(part))
        || upper_snake(value)
}

/// `a.b.c` where every part is an identifier: `settings.API_KEY`, `config.auth.token`.
fn code_path(value: &str) -> bool {
    let mut parts = value.split('.');
    let identifier = |part: &str| {
        part.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    value.contains('.') && parts.all(identifier)
}

/// An environment variable's name: `GITHUB_TOKEN`, `DB_PASSWORD_2`.
fn upper_snake(value: &str) -> bool {
    value.contains('_')
        && value.starts_with(|c: char| c.is_ascii_uppercase())
        && value
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A path or file name: `/etc/ssl/key.pem`, `./secrets.json`, `~/.aws/credentials`.
fn path_like(value: &str) -> bool {
    const EXTENSIONS: &[&str] = &[
        ".pem", ".key", ".json", ".txt", ".yaml", ".yml", ".toml", ".env", ".p12", ".pfx", ".crt",
        ".ini",
    ];
    let lower = value.to_ascii_lowercase();
    ["/", "./", "../", "~/"]
        .iter()
        .any(|start| value.starts_with(start))
        || value.get(1..3) == Some(":\\")
        || value.contains('\\')
        || EXTENSIONS
            .iter()
            .any(|extension| lower.ends_with(extension))
}

/// `value` without what follows it in prose or code rather than belonging to it: a closing
/// bracket or a sentence's full stop.
pub(super) fn trim_value(value: &str) -> &str {
    value.trim_end_matches([')', ']', '}', '>', '.'])
}

/// Whether what follows an unquoted `name: value` makes the value a type, as in Rust's
/// `const NAME: Type = …` or `trait Name: Super {`: `=` (not `==`, `=>`) or `{` next.
pub(super) fn type_annotation(after: &str) -> bool {
    let after = after.trim_start_matches([' ', '\t']);
    after.starts_with('{')
        || (after.starts_with('=') && !after.starts_with("==") && !after.starts_with("=>"))
}

/// Whether a URL's password is a placeholder or no password: the user's name again, shorter
/// than 4 characters, a port-like number, holding a `:` (CVS's `:pserver:user@host`), or a
/// [`placeholder`].
pub(super) fn url_placeholder(user: &str, password: &str) -> bool {
    password.eq_ignore_ascii_case(user)
        || password.chars().count() < 4
        || (password.len() <= 5 && password.chars().all(|c| c.is_ascii_digit()))
        || password.contains(':')
        || placeholder(password)
        || (password.contains('%') && placeholder(&percent_decoded(password)))
}

/// Whether an `Authorization` header's credentials look real: `Basic` credentials that do
/// not decode to a placeholder password; an Okta `SSWS` token ([`okta_token`]); other
/// schemes as an assigned secret, or a [`dotted_token`].
pub(super) fn auth_credentials(scheme: &str, value: &str) -> bool {
    if scheme.eq_ignore_ascii_case("basic")
        && let Some(decoded) = base64_decode(value)
        && let Ok(decoded) = String::from_utf8(decoded)
        && let Some((user, password)) = decoded.split_once(':')
    {
        return !password.is_empty() && !url_placeholder(user, password);
    }
    if scheme.eq_ignore_ascii_case("ssws") {
        return okta_token(value);
    }
    assigned_value(value, false) || dotted_token(value)
}

/// An Okta API token after `SSWS` (the scheme names the credential): at least 20
/// characters, letters and digits, varied, not a [`stand_in`] such as `${OKTA_TOKEN}`.
fn okta_token(value: &str) -> bool {
    let classes = Classes::of(value);
    (20..=LONGEST_ASSIGNED).contains(&value.len())
        && classes.digit > 0
        && classes.letters() > 1
        && !stand_in(value)
        && entropy(value) >= 3.5
}

/// A bearer token of dot-separated parts (`abc.def123.ghi456jkl789mno`), which
/// [`assigned_value`] takes for a dotted code path (`settings.API_KEY`): two of its parts or
/// more mix letters and digits over six characters or more, as identifiers of words do not,
/// and it is otherwise an assigned secret.
fn dotted_token(value: &str) -> bool {
    let mixed = |part: &&str| {
        part.len() >= 6
            && part.bytes().any(|b| b.is_ascii_digit())
            && part.bytes().any(|b| b.is_ascii_alphabetic())
    };
    value.split('.').filter(mixed).count() >= 2 && judged(value, false, true)
}

/// The longest assigned value judged, in bytes: a longer one is data (a certificate, a
/// blob), not a password or an API key.
const LONGEST_ASSIGNED: usize = 1024;

/// Whether a value assigned to a secret-sounding name looks like a real secret.
///
/// Secrets (after key/token/secret/auth/credential names): at least 16 characters, digits and
/// letters both, an alphanumeric run of 6 or more mixing them (so `gpt-4o-mini-2024-07-18` and
/// dates are not), entropy over [`entropy_bar`], not an identifier made of words
/// ([`wordy`]). Passwords (after password/passwd/pwd/pass names): at least 8 characters,
/// letters with digits or symbols, entropy at least 2.5. Both: not a [`placeholder`] or
/// reference, not a URL, not a path, at most [`LONGEST_ASSIGNED`] bytes; judged
/// percent-decoded (`value%20with%27quotes%27`).
pub(super) fn assigned_value(value: &str, password: bool) -> bool {
    judged(value, password, false)
}

/// [`assigned_value`], with dotted values judged as tokens rather than code paths when
/// `dotted` (a [`dotted_token`]).
fn judged(value: &str, password: bool, dotted: bool) -> bool {
    if value.len() > LONGEST_ASSIGNED {
        return false;
    }
    let decoded = percent_decoded(value);
    let value = decoded.as_str();
    let len = value.chars().count();
    let placeholder = if dotted {
        counts_up(value) || stand_in(value)
    } else {
        placeholder(value)
    };
    if len < if password { 8 } else { 16 }
        || value.contains("://")
        || path_like(value)
        || placeholder
    {
        return false;
    }
    let classes = Classes::of(value);
    if password {
        return classes.letters() > 0
            && (classes.digit > 0 || classes.symbol > 0 || classes.other > 0)
            && entropy(value) >= 2.5;
    }
    let mixed_run = value
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|run| {
            run.len() >= 6
                && run.bytes().any(|b| b.is_ascii_digit())
                && run.bytes().any(|b| b.is_ascii_alphabetic())
        });
    let hex = value.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    classes.digit > 0
        && classes.letters() > 1
        && mixed_run
        && !wordy(value)
        && entropy(value) >= entropy_bar(len, hex)
}

/// Whether `value` is an identifier made of words, such as `X509CertificateTemplateFlag` or
/// `x25519_generate_private_key` (a type or function after `name:`): three quarters of its
/// letters or more are in capitalised or lower-case words of four letters or more. Random
/// tokens rarely are (about 1 % of 16-character ones, fewer of longer ones, by sampling).
fn wordy(value: &str) -> bool {
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return false;
    }
    let letters = value.bytes().filter(u8::is_ascii_alphabetic).count();
    let in_words: usize = (words_cased(value).iter())
        .filter(|w| {
            w.len() >= 4
                && w.bytes().all(|b| b.is_ascii_alphabetic())
                && w[1..].bytes().all(|b| b.is_ascii_lowercase())
        })
        .map(String::len)
        .sum();
    in_words * 4 >= letters * 3
}

/// `value` with `%XX` escapes decoded (lossily); unchanged without any.
pub(super) fn percent_decoded(value: &str) -> String {
    if !value.contains('%') {
        return value.to_owned();
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What a name says its value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NameKind {
    /// A key, token, secret, auth or credential.
    Secret,
    /// A password.
    Password,
}

/// Name parts that make a name a password's.
static PASSWORD_WORDS: WordSet = WordSet::new("password passwd pwd pass passphrase passcode pw");

/// Name parts that make a name a secret's.
static SECRET_WORDS: WordSet = WordSet::new(
    "key token secret auth credential credentials cred creds apikey \
    secretkey accesskey privatekey authkey authtoken accesstoken refreshtoken sessiontoken \
    clientsecret signingkey masterkey encryptionkey",
);

/// Name parts that make a secret-sounding name something else wherever they stand:
/// `public_key`, `primary_key`, `sort_key`, `max_tokens`, `cache_key`, `key_hash`.
static NOT_SECRET_ANYWHERE: WordSet = WordSet::new(
    "public pub pubkey publishable primary foreign sort partition \
    cache idempotency max min num total site unique composite dedup lookup hash hashed sha md5 \
    checksum digest fingerprint hint placeholder example sample description policy strength \
    object row map dict group registry translation i18n locale gpg pgp page next pagination \
    continuation cursor sync resume bos eos pad unk sep cls special",
);

/// Name parts that make a secret-sounding name something else as its last part: `key_id`,
/// `token_url`, `secret_name`, `password_file`, `token_count`.
static NOT_SECRET_LAST: WordSet = WordSet::new(
    "id ids name names url uri urls file files path dir type types kind \
    count len length size limit limits format version prefix suffix field fields column header \
    index expiry expires expiration expire exp ttl timeout age endpoint host port env var \
    variable location region method mode provider scope scopes usage list enabled required \
    rotation algorithm alg bits encoding pattern regex source ref template param attr class style \
    mask level error message msg text label title manager store ring board code status hook \
    handler reset change update changed",
);

/// A space-separated word list as a set, built once.
struct WordSet {
    words: &'static str,
    set: OnceLock<HashSet<&'static str>>,
}

impl WordSet {
    const fn new(words: &'static str) -> Self {
        Self {
            words,
            set: OnceLock::new(),
        }
    }

    fn has(&self, word: &str) -> bool {
        (self
            .set
            .get_or_init(|| self.words.split_ascii_whitespace().collect()))
        .contains(word)
    }
}

/// What `name` (an identifier, a dotted or dashed config key, a JSON key) says its value is:
/// split into words at `_`, `-`, `.` and camel case, a name is a password's or a secret's when
/// one word is (`DB_PASSWORD`, `apiKey`, `x-api-key`, `GITHUB_TOKEN`), unless another word
/// says otherwise (`public_key`, `token_count`, `key_id`, `max_tokens`).
pub(super) fn name_kind(name: &str) -> Option<NameKind> {
    let words = words(name);
    let last = words.last()?;
    if NOT_SECRET_LAST.has(last) || words.iter().any(|w| NOT_SECRET_ANYWHERE.has(w)) {
        return None;
    }
    let is = |list: &WordSet, suffixes: &str| {
        (words.iter()).any(|w| {
            list.has(w)
                || (suffixes.split_ascii_whitespace()).any(|s| w.len() > s.len() && w.ends_with(s))
        })
    };
    if is(&PASSWORD_WORDS, "password passwd passphrase") {
        Some(NameKind::Password)
    } else if is(
        &SECRET_WORDS,
        "token secret apikey secretkey accesskey privatekey",
    ) {
        Some(NameKind::Secret)
    } else {
        None
    }
}

/// `name`'s words, lower-cased ([`words_cased`]).
fn words(name: &str) -> Vec<String> {
    let mut words = words_cased(name);
    for word in &mut words {
        word.make_ascii_lowercase();
    }
    words
}

/// `name`'s words: split at non-alphanumerics, at lower-to-upper case changes (`apiKey`),
/// before the last capital of an acronym (`APIKey`), and between letters and digits
/// (`password2`).
fn words_cased(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        if let Some(&previous) = i.checked_sub(1).and_then(|p| chars.get(p)) {
            let next_lower = chars.get(i + 1).is_some_and(char::is_ascii_lowercase);
            let boundary = (previous.is_ascii_lowercase() && c.is_ascii_uppercase())
                || (previous.is_ascii_uppercase() && c.is_ascii_uppercase() && next_lower)
                || (previous.is_ascii_digit() != c.is_ascii_digit()
                    && previous.is_ascii_alphanumeric());
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
        }
        word.push(c);
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}
