//! Credentials in text: what engram looks for in every text written to memory (observations,
//! node names, types, summaries, tags) so that a key pasted into a conversation is not kept
//! where everyone with access to the workspace reads it.
//!
//! The rules follow the published formats that [gitleaks](https://github.com/gitleaks/gitleaks)
//! (its `config/gitleaks.toml` rules) and GitHub secret scanning's supported patterns detect:
//!
//! - **prefixed tokens**, whose shape alone identifies them: AWS access key ids, Google API
//!   keys and OAuth access tokens (`ya29.`), GitHub, GitLab, Bitbucket, npm, PyPI, Slack,
//!   Discord, Telegram, Stripe, OpenAI, Anthropic, Twilio, SendGrid, Mailgun and Hugging Face
//!   tokens, Slack and Discord webhooks;
//! - **structures**: PEM/OpenSSH/PGP private-key blocks, JWTs (whose header must decode to
//!   JSON naming an algorithm; a space may stand on either side of each dot), passwords in
//!   URLs (`scheme://user:password@host`), the signature (`sig=`) of an Azure SAS URL;
//! - **assigned values**: a value after a name that says it is secret (`api_key = …`,
//!   `"token": "…"`, `DB_PASSWORD=…`, `Authorization: Bearer …` (dotted tokens too), Okta's
//!   `Authorization: SSWS …`, AWS secret keys, Azure `AccountKey=`) when it looks random:
//!   long enough, varied enough (Shannon entropy, as gitleaks' generic rule), and not a
//!   placeholder or a reference to where the secret is kept (`$VAR`, `${VAR}`, `<password>`,
//!   `{{ secrets.X }}`, `os.environ[…]`, `changeme`).
//!
//! A token must stand alone: one glued to more letters or digits (inside a base64 blob, a
//! longer identifier) is not a match, so image data, digests and hashes are never flagged.
//! [`SecretKind::label`] lists the kinds.
//!
//! Disguises: full-width forms (`ｇｈｐ＿…`) are read as ASCII and invisible characters
//! (zero-width space, non-joiner and joiner, word joiner, byte-order mark) are dropped before
//! matching, so `AKIA\u{200B}IOSF…` is a key; and a base64 run of 24 characters to 4 KiB
//! that decodes to UTF-8 text holding a credential is that credential (the whole run is its
//! range). Longer runs (image data) are not decoded, and decoded text is not decoded again,
//! so the work stays linear.
//!
//! Cost: the rules are compiled once; what each rule's matches must hold (its anchor: `ghp_`,
//! `AKIA`, `-----BEGIN`, `://`, a secret-sounding name followed by `=` or `:`) is one
//! [`regex::RegexSet`], so a text none of whose anchors occur (most texts) costs one linear
//! scan, and only the rules whose anchors occur run on their own to find and check their
//! matches. The `regex` crate never backtracks, and every check is linear, so a 64 KiB text
//! costs time linear in its length whatever it holds (a few milliseconds in a debug build).
//!
//! Limits, chosen to keep ordinary text unflagged: an assigned value is one word (a password
//! with spaces, `password hunter2` without `=` or `:`, `mysql -pX` are not found); a secret
//! must have digits and letters (a letters-only value is not found), a password at least 8
//! characters with a digit or a symbol; a value that is an identifier made of words, a
//! dotted path, a type after `name:`, or longer than 1 KiB is not a secret; a password in a
//! URL equal to the user's name or a common default (`postgres`, `guest`, `secret`) is a
//! placeholder. Well-formed example credentials from documentation (AWS's `AKIA…EXAMPLE`, a
//! JWT from a README) are found: a format cannot tell them from real ones.
//!
//! `SECRETS_CORPUS` and `ORDINARY_CORPUS` (built for tests and the `testsuite` feature only)
//! are the acceptance tests: every line of the first must be found with its label, no line of
//! the second may be.

use std::borrow::Cow;
use std::ops::Range;

mod checks;
#[cfg(any(test, feature = "testsuite"))]
mod corpus;
mod patterns;
pub(crate) mod policy;
mod private_key;
mod values;

#[cfg(test)]
mod tests;

#[cfg(any(test, feature = "testsuite"))]
pub use corpus::{ORDINARY_CORPUS, SECRETS_CORPUS, ordinary_corpus, secrets_corpus};

/// What kind of credential a match is; [`label()`](Self::label) gives the stable kebab-case
/// name used in errors and redaction markers, e.g. "aws-access-key", "github-token",
/// "private-key", "jwt", "url-password", "assigned-secret".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// `aws-access-key`: an AWS access key id, `AKIA`/`ASIA`/`ABIA`/`ACCA`/`A3T?` and 16
    /// upper-case letters or digits.
    AwsAccessKey,
    /// `aws-secret-key`: 40 base64 characters after `aws_secret_access_key`,
    /// `secretAccessKey` and the like.
    AwsSecretKey,
    /// `google-api-key`: `AIza` and 35 characters of `[A-Za-z0-9_-]`.
    GoogleApiKey,
    /// `google-oauth-token`: a Google OAuth access token, `ya29.` and at least 30 characters
    /// mixing upper case, lower case and digits.
    GoogleOauthToken,
    /// `azure-storage-key`: an Azure storage connection string's `AccountKey=` (88 base64
    /// characters ending `==`).
    AzureStorageKey,
    /// `azure-sas-token`: the signature of a shared access signature URL (`…&sig=…`), base64
    /// of at least 24 bytes, percent-encoded or not.
    AzureSasToken,
    /// `github-token`: `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` and 36 letters or digits, or a
    /// fine-grained `github_pat_` and 82.
    GithubToken,
    /// `gitlab-token`: `glpat-` (and the other `gl…-` token prefixes) and at least 20
    /// characters.
    GitlabToken,
    /// `bitbucket-app-password`: `ATBB` and 32 letters or digits.
    BitbucketAppPassword,
    /// `npm-token`: `npm_` and 36 letters or digits.
    NpmToken,
    /// `pypi-token`: a macaroon for pypi.org, `pypi-` then `AgEIcHlwaS5vcmc` and at least
    /// 50 more characters.
    PypiToken,
    /// `slack-token`: `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxo-`, `xoxe-` tokens and
    /// `xapp-` app-level tokens.
    SlackToken,
    /// `slack-webhook`: `https://hooks.slack.com/services/T…/B…/…` (and `workflows/`,
    /// `triggers/`).
    SlackWebhook,
    /// `discord-token`: a bot token, three dot-separated base64url parts whose first decodes
    /// to the bot's numeric id.
    DiscordToken,
    /// `discord-webhook`: `https://discord.com/api/webhooks/ID/TOKEN`.
    DiscordWebhook,
    /// `telegram-bot-token`: 8–10 digits, `:`, and 35 characters starting `A`.
    TelegramBotToken,
    /// `stripe-key`: `sk_live_`, `rk_live_`, `sk_test_`, `rk_test_` keys and `whsec_` webhook
    /// secrets.
    StripeKey,
    /// `openai-key`: `sk-` and 48 letters or digits, or `sk-proj-`, `sk-svcacct-`,
    /// `sk-admin-` keys.
    OpenaiKey,
    /// `anthropic-key`: `sk-ant-api03-`, `sk-ant-admin01-`, `sk-ant-oat01-` and the like.
    AnthropicKey,
    /// `twilio-key`: an API key sid, `SK` and 32 lower-case hex digits.
    TwilioKey,
    /// `sendgrid-key`: `SG.`, 22 characters, `.`, 43 characters.
    SendgridKey,
    /// `mailgun-key`: `key-` and 32 lower-case hex digits.
    MailgunKey,
    /// `huggingface-token`: `hf_` and 34 letters or digits of mixed case.
    HuggingfaceToken,
    /// `private-key`: a `-----BEGIN … PRIVATE KEY-----` block (RSA, EC, DSA, OpenSSH, PGP,
    /// PKCS#8, encrypted; a GCP service account's JSON `private_key` with its `\n` escapes),
    /// through its `END` line, or its base64 lines when cut short; a header without key
    /// material (named in prose) is not one.
    PrivateKey,
    /// `jwt`: a signed JSON Web Token, `eyJ…` header `.` `eyJ…` payload `.` signature.
    Jwt,
    /// `url-password`: the password of `scheme://user:password@host`, unless a placeholder
    /// (`password`, `changeme`, `***`, `${VAR}`, `$VAR`, the user's name again).
    UrlPassword,
    /// `auth-header`: the credentials of an `Authorization: Bearer|Basic|Token|SSWS …` header.
    AuthHeader,
    /// `assigned-secret`: a random-looking value of at least 16 characters after a name
    /// holding key, token, secret, auth or credential.
    AssignedSecret,
    /// `password`: a value of at least 8 characters mixing letters with digits or symbols
    /// after a name holding password, passwd, pwd, pass or passphrase.
    Password,
}

impl SecretKind {
    /// The stable kebab-case name of the kind, used in errors and in `[redacted: LABEL]`.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::AwsAccessKey => "aws-access-key",
            Self::AwsSecretKey => "aws-secret-key",
            Self::GoogleApiKey => "google-api-key",
            Self::GoogleOauthToken => "google-oauth-token",
            Self::AzureStorageKey => "azure-storage-key",
            Self::AzureSasToken => "azure-sas-token",
            Self::GithubToken => "github-token",
            Self::GitlabToken => "gitlab-token",
            Self::BitbucketAppPassword => "bitbucket-app-password",
            Self::NpmToken => "npm-token",
            Self::PypiToken => "pypi-token",
            Self::SlackToken => "slack-token",
            Self::SlackWebhook => "slack-webhook",
            Self::DiscordToken => "discord-token",
            Self::DiscordWebhook => "discord-webhook",
            Self::TelegramBotToken => "telegram-bot-token",
            Self::StripeKey => "stripe-key",
            Self::OpenaiKey => "openai-key",
            Self::AnthropicKey => "anthropic-key",
            Self::TwilioKey => "twilio-key",
            Self::SendgridKey => "sendgrid-key",
            Self::MailgunKey => "mailgun-key",
            Self::HuggingfaceToken => "huggingface-token",
            Self::PrivateKey => "private-key",
            Self::Jwt => "jwt",
            Self::UrlPassword => "url-password",
            Self::AuthHeader => "auth-header",
            Self::AssignedSecret => "assigned-secret",
            Self::Password => "password",
        }
    }
}

impl std::fmt::Display for SecretKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One credential found in a text: its kind and byte range.
///
/// The range covers the credential itself: the whole token for prefixed tokens, JWTs and
/// private-key blocks; only the value for assigned secrets (`api_key = ` stays), only the
/// password of a URL; the whole base64 run for a credential wrapped in base64; always on
/// character boundaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMatch {
    /// What kind of credential it is.
    pub kind: SecretKind,
    /// Where it is in the text, in bytes.
    pub range: Range<usize>,
}

/// Every credential in `text`, in order, not overlapping (on overlap keep the earlier, then
/// the longer; a prefixed token before the generic rules when both cover the same bytes,
/// and any rule before a credential found wrapped in base64).
/// Full-width forms (`ｇｈｐ＿…`, `ＡＫＩＡ…`, `１２３`) are read as the ASCII they stand
/// for and invisible characters (U+200B, U+200C, U+200D, U+2060, U+FEFF) are dropped; the
/// ranges are the original text's.
#[must_use]
pub fn find_secrets(text: &str) -> Vec<SecretMatch> {
    find_in(text, true)
}

/// [`find_secrets`], looking into base64 runs when `unwrap`.
fn find_in(text: &str, unwrap: bool) -> Vec<SecretMatch> {
    if let Some(folded) = Folded::new(text) {
        return (find_in(&folded.text, unwrap).into_iter())
            .map(|found| folded.original(found))
            .collect();
    }
    let mut found: Vec<(SecretMatch, usize)> = Vec::new();
    for rule in patterns::candidate_rules(text) {
        found.extend(patterns::matches(rule, text).map(|m| (m, rule)));
    }
    if unwrap {
        found.extend(wrapped(text).map(|m| (m, WRAPPED_RULE)));
    }
    found.sort_by_key(|(m, rule)| (m.range.start, std::cmp::Reverse(m.range.end), *rule));
    let mut kept: Vec<SecretMatch> = Vec::with_capacity(found.len());
    for (m, _) in found {
        if kept
            .last()
            .is_none_or(|last| m.range.start >= last.range.end)
        {
            kept.push(m);
        }
    }
    kept
}

/// The first credential in `text` (the first [`find_secrets`] would return), cheaper than
/// [`find_secrets`] when refusing: each matching rule stops at its first match.
#[must_use]
pub fn first_secret(text: &str) -> Option<SecretMatch> {
    first_in(text, true)
}

/// [`first_secret`], looking into base64 runs when `unwrap`.
fn first_in(text: &str, unwrap: bool) -> Option<SecretMatch> {
    if let Some(folded) = Folded::new(text) {
        return first_in(&folded.text, unwrap).map(|found| folded.original(found));
    }
    let inside = unwrap.then(|| wrapped(text).next()).flatten();
    patterns::candidate_rules(text)
        .filter_map(|rule| patterns::matches(rule, text).next().map(|m| (m, rule)))
        .chain(inside.map(|m| (m, WRAPPED_RULE)))
        .min_by_key(|(m, rule)| (m.range.start, std::cmp::Reverse(m.range.end), *rule))
        .map(|(m, _)| m)
}

/// The shortest base64 run decoded (18 bytes of text).
const WRAPPED_MIN: usize = 24;

/// The longest base64 run decoded, in bytes: a longer one is data (an image), and the bound
/// keeps the work of decoding linear.
const WRAPPED_MAX: usize = 4 * 1024;

/// Where a credential found in base64 ranks among the rules: after all of them.
const WRAPPED_RULE: usize = usize::MAX;

/// The base64 runs of `text` ([`WRAPPED_MIN`] to [`WRAPPED_MAX`] characters of the
/// standard or URL-safe alphabet, and their `=` padding) that decode to UTF-8 text holding
/// a credential: each as that credential's kind over the whole run, in order.
fn wrapped(text: &str) -> impl Iterator<Item = SecretMatch> + '_ {
    let bytes = text.as_bytes();
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_');
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            if !alphabet(bytes[at]) {
                at += 1;
                continue;
            }
            let start = at;
            while at < bytes.len() && alphabet(bytes[at]) {
                at += 1;
            }
            let body = at;
            while at < bytes.len() && at - body < 2 && bytes[at] == b'=' {
                at += 1;
            }
            if !(WRAPPED_MIN..=WRAPPED_MAX).contains(&(body - start)) {
                continue;
            }
            let decoded = checks::base64_decode(&text[start..at])
                .and_then(|decoded| String::from_utf8(decoded).ok());
            if let Some(inner) = decoded.as_deref().and_then(|inner| first_in(inner, false)) {
                return Some(SecretMatch {
                    kind: inner.kind,
                    range: start..at,
                });
            }
        }
        None
    })
}

/// A text with its full-width ASCII forms (U+FF01–U+FF5E) and ideographic spaces folded to
/// ASCII, one character for one, its invisible characters dropped, and where each of its
/// bytes came from.
struct Folded {
    text: String,
    /// For each byte of `text`, where its character starts in the original.
    starts: Vec<usize>,
    /// For each byte of `text`, where its character ends in the original.
    ends: Vec<usize>,
}

impl Folded {
    /// What folding does with `c`: `None` keeps it, `Some(None)` drops it (an invisible
    /// character that may split a token), `Some(Some(a))` reads it as `a`.
    fn fold(c: char) -> Option<Option<char>> {
        match c {
            '\u{FF01}'..='\u{FF5E}' => Some(char::from_u32(c as u32 - 0xFEE0)),
            '\u{3000}' => Some(Some(' ')),
            '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' => Some(None),
            _ => None,
        }
    }

    /// `None` when `text` has nothing to fold (the common case: no copy).
    fn new(text: &str) -> Option<Self> {
        if text.is_ascii() || !text.chars().any(|c| Self::fold(c).is_some()) {
            return None;
        }
        let mut folded = Self {
            text: String::with_capacity(text.len()),
            starts: Vec::with_capacity(text.len()),
            ends: Vec::with_capacity(text.len()),
        };
        for (at, original) in text.char_indices() {
            let Some(c) = Self::fold(original).unwrap_or(Some(original)) else {
                continue;
            };
            folded.text.push(c);
            let end = at + original.len_utf8();
            folded.starts.extend(std::iter::repeat_n(at, c.len_utf8()));
            folded.ends.extend(std::iter::repeat_n(end, c.len_utf8()));
        }
        Some(folded)
    }

    /// `found` in the folded text as the range of the original it came from.
    fn original(&self, found: SecretMatch) -> SecretMatch {
        let start = self.starts[found.range.start];
        let end = if found.range.is_empty() {
            start
        } else {
            self.ends[found.range.end - 1]
        };
        SecretMatch {
            kind: found.kind,
            range: start..end,
        }
    }
}

/// `text` with each credential replaced by `[redacted: LABEL]`; [`Cow::Borrowed`] when none.
#[must_use]
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = find_secrets(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut redacted = String::with_capacity(text.len());
    let mut from = 0;
    for SecretMatch { kind, range } in found {
        redacted.push_str(&text[from..range.start]);
        redacted.push_str("[redacted: ");
        redacted.push_str(kind.label());
        redacted.push(']');
        from = range.end;
    }
    redacted.push_str(&text[from..]);
    Cow::Owned(redacted)
}

/// What a write does with a text holding a credential ([`crate::secrets::find_secrets`]).
/// Texts are screened after their limits are checked, and a redacted one is checked again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SecretPolicy {
    /// Refuse the whole call with [`crate::Error::InvalidArgument`] naming the field and the kind of
    /// credential, never the credential; nothing is written. The default.
    #[default]
    Refuse,
    /// Store the text with each credential replaced by `[redacted: KIND]`; a name-like text
    /// (a node's name or type, a relation's type) holding one is refused all the same.
    Redact,
    /// Store texts as given.
    Allow,
}

impl std::str::FromStr for SecretPolicy {
    type Err = String;

    /// `refuse`, `redact` or `allow`.
    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "refuse" => Ok(Self::Refuse),
            "redact" => Ok(Self::Redact),
            "allow" => Ok(Self::Allow),
            other => Err(format!(
                "unknown secrets policy {other:?}: refuse, redact or allow"
            )),
        }
    }
}
