//! The rules: one regular expression each, compiled once, and each rule's anchor (what all
//! its matches hold: `ghp_`, `AKIA`, `://`, a secret-sounding name and `=`) together in the
//! [`RegexSet`] that tells, in one scan, which rules can match a text at all. (The full
//! patterns in one set made the lazy DFA thrash, their counted repetitions overlapping:
//! 40 ms a 64 KiB text against about 0.4 ms for the anchors.)
//!
//! Shapes are gitleaks' (`config/gitleaks.toml`) and GitHub secret scanning's published
//! formats, with their boundaries made explicit: a token must not be glued to more letters,
//! digits or `_` (or the token's own punctuation) on either side, which the `regex` crate's
//! lack of look-around leaves to [`accept`]. Patterns use ASCII classes only (no `\w`, `\s`,
//! `\b`), so the crate's Unicode tables are not needed and the lazy DFA never has to give up
//! on a non-ASCII text.

use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

use super::{SecretKind, SecretMatch};
use super::{checks, private_key, values};

/// How a rule's regex match becomes a [`SecretMatch`], or is dropped.
enum Accept {
    /// The match is a token: it must not touch a letter, a digit, `_` or one of `extra` on
    /// its right, nor on its left (unless the pattern matches its own left context and names
    /// the token as group `s`), and `check` must hold for it.
    Token {
        /// Punctuation that belongs to the token's alphabet.
        extra: &'static str,
        /// Shape checks beyond the pattern (placeholders, decoding).
        check: fn(&str) -> bool,
    },
    /// A private-key header, extended through its block ([`private_key::private_key_end`]).
    PrivateKey,
    /// `scheme://user:password@`: the password, unless a placeholder.
    UrlPassword,
    /// `Authorization: <scheme> <credentials>`: the credentials, if they look real.
    AuthHeader,
    /// `name <sep> value`: the value, if the name says secret and the value looks random.
    Assigned,
    /// A password outside an assignment (a command line, prose): the value, if it looks like
    /// a password rather than a word or a placeholder.
    CommandPassword,
}

/// One kind of credential and how to find it.
struct Rule {
    kind: SecretKind,
    /// What every match holds, cheap to look for (literals, short classes): the prefilter.
    anchor: &'static str,
    /// The credential's shape.
    pattern: &'static str,
    accept: Accept,
}

/// A token rule with the usual boundaries and checks.
const fn token(
    kind: SecretKind,
    anchor: &'static str,
    pattern: &'static str,
    extra: &'static str,
) -> Rule {
    checked(kind, anchor, pattern, extra, checks::varied)
}

/// A token rule with its own shape check (the token is group `s` when the pattern matches
/// its left context too, as a value after its name).
const fn checked(
    kind: SecretKind,
    anchor: &'static str,
    pattern: &'static str,
    extra: &'static str,
    check: fn(&str) -> bool,
) -> Rule {
    Rule {
        kind,
        anchor,
        pattern,
        accept: Accept::Token { extra, check },
    }
}

/// Every rule, in priority order: where two rules match the same bytes, the first wins, so
/// specific formats come before URLs' passwords and the generic assigned-value rules.
static RULES: &[Rule] = &[
    Rule {
        kind: SecretKind::PrivateKey,
        anchor: "-----BEGIN",
        pattern: r"-----BEGIN[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----",
        accept: Accept::PrivateKey,
    },
    checked(
        SecretKind::Jwt,
        r"\.[ \t]?eyJ",
        // A space or tab may stand on either side of each dot (a JWT pasted across a line
        // wrap, or spaced out): `eyJ… . eyJ… . sig`.
        r"eyJ[A-Za-z0-9_-]{8,}[ \t]?\.[ \t]?eyJ[A-Za-z0-9_-]{8,}[ \t]?\.[ \t]?[A-Za-z0-9_-]{16,}",
        "-",
        checks::jwt,
    ),
    checked(
        SecretKind::SlackWebhook,
        r"hooks\.slack\.com/",
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}",
        "-+/",
        checks::webhook,
    ),
    checked(
        SecretKind::DiscordWebhook,
        r"discord(?:app)?\.com/api/",
        r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/(?:v[0-9]{1,2}/)?webhooks/[0-9]{17,20}/[A-Za-z0-9_-]{60,68}",
        "-",
        checks::webhook,
    ),
    token(
        SecretKind::AwsAccessKey,
        "A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA",
        "(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
        "",
    ),
    token(
        SecretKind::GoogleApiKey,
        "AIza",
        "AIza[A-Za-z0-9_-]{35}",
        "-",
    ),
    checked(
        SecretKind::GoogleOauthToken,
        r"ya29\.",
        r"ya29\.(?:[a-z]\.)?[A-Za-z0-9_-]{30,}",
        "-",
        checks::google_oauth,
    ),
    token(
        SecretKind::GithubToken,
        "gh[pousr]_|github_pat_",
        "(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82}",
        "",
    ),
    token(
        SecretKind::GitlabToken,
        "gl(?:pat|dt|rt|ptt|soat|ft|cbt|imt|agent|oas)-",
        "(?:glpat|gldt|glrt|glptt|glsoat|glft|glcbt|glimt|glagent|gloas)-[A-Za-z0-9_-]{20,}",
        "-",
    ),
    token(
        SecretKind::BitbucketAppPassword,
        "ATBB",
        "ATBB[A-Za-z0-9]{32}",
        "",
    ),
    token(SecretKind::NpmToken, "npm_", "npm_[A-Za-z0-9]{36}", ""),
    token(
        SecretKind::PypiToken,
        "pypi-AgEIcHlwaS5vcmc",
        "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        "-",
    ),
    token(
        SecretKind::SlackToken,
        "xox[abposre]|xapp-",
        "xox[abposr]-[0-9]{6,13}-[A-Za-z0-9-]{8,}|xoxe(?:\\.xox[bp])?-[0-9]-[A-Za-z0-9]{100,}\
         |xapp-[0-9]-[A-Z0-9]{6,}-[0-9]{6,}-[A-Za-z0-9]{20,}",
        "-",
    ),
    checked(
        SecretKind::DiscordToken,
        r"\.[A-Za-z0-9_-]{6}\.",
        r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}",
        "-",
        checks::discord_token,
    ),
    checked(
        SecretKind::TelegramBotToken,
        "[0-9]:A",
        "(?:^|[^A-Za-z0-9_]|bot)(?P<s>[0-9]{8,10}:A[A-Za-z0-9_-]{34})",
        "-",
        checks::varied,
    ),
    token(
        SecretKind::StripeKey,
        "[sr]k_(?:live|test|prod)_|whsec_",
        "(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,99}|whsec_[A-Za-z0-9]{32,}",
        "",
    ),
    token(
        SecretKind::AnthropicKey,
        "sk-ant-",
        "sk-ant-(?:api|admin|oat|ort|sid)[0-9]{2}-[A-Za-z0-9_-]{40,}",
        "-",
    ),
    checked(
        SecretKind::OpenaiKey,
        "sk-",
        "sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|sk-[A-Za-z0-9]{48}",
        "-",
        checks::mixed_token,
    ),
    checked(
        SecretKind::TwilioKey,
        "SK[0-9a-f]{4}",
        "SK[0-9a-f]{32}",
        "",
        checks::hex_token,
    ),
    token(
        SecretKind::SendgridKey,
        r"SG\.",
        r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        "-",
    ),
    checked(
        SecretKind::MailgunKey,
        "key-[0-9a-f]{4}",
        "key-[0-9a-f]{32}",
        "-",
        checks::hex_token,
    ),
    checked(
        SecretKind::HuggingfaceToken,
        "hf_",
        "hf_[A-Za-z0-9]{34}",
        "",
        checks::huggingface,
    ),
    Rule {
        kind: SecretKind::UrlPassword,
        anchor: "://",
        pattern: "[A-Za-z][A-Za-z0-9+.-]{1,20}://(?P<user>[^/?#@: \t\r\n\"'<>`]*):\
                  (?P<s>[^/?#@ \t\r\n\"'<>`]+)@[A-Za-z0-9_\\[-]",
        accept: Accept::UrlPassword,
    },
    checked(
        SecretKind::AwsSecretKey,
        "(?i-u:secret[_.-]?access|aws[_.-]?secret)",
        "(?i-u:aws[_.-]?secret[_.-]?(?:access[_.-]?)?key|secret[_.-]?access[_.-]?key)\
         [\"'`]?[ \t]*(?:=>|:=|=|:)[ \t]*[\"'`]?(?P<s>[A-Za-z0-9/+]{40})",
        "+/=",
        checks::aws_secret,
    ),
    checked(
        SecretKind::AzureStorageKey,
        "(?i-u:accountkey)",
        "(?i-u:accountkey)[ \t]*=[ \t]*(?P<s>[A-Za-z0-9+/]{86}==)",
        "+/=",
        checks::varied,
    ),
    // A shared access signature's `sig=` (Azure Storage SAS URLs): the signature alone.
    checked(
        SecretKind::AzureSasToken,
        "[?&](?i-u:sig)=",
        "[?&](?i-u:sig)=(?P<s>[A-Za-z0-9%+/=_-]{20,})",
        "%+/=-",
        checks::sas_signature,
    ),
    Rule {
        kind: SecretKind::AuthHeader,
        anchor: "(?i-u:authorization)",
        pattern: "(?i-u:authorization)[\"'`]?[ \t]*[:=][ \t]*[\"'`]?\
                  (?P<scheme>(?i-u:bearer|basic|token|bot|ssws))[ \t]+(?P<s>[A-Za-z0-9._~+/=-]{12,})",
        accept: Accept::AuthHeader,
    },
    // `Bearer <token>` without the header's name (`curl -H "Bearer …"`, a note).
    Rule {
        kind: SecretKind::AuthHeader,
        anchor: "(?i-u:bearer)[ \t]",
        pattern: "(?P<scheme>(?i-u:bearer))[ \t]+(?P<s>[A-Za-z0-9._~+/=-]{20,})",
        accept: Accept::AuthHeader,
    },
    // Passwords on a command line: `curl -u user:PASSWORD`, `--user user:PASSWORD`, and
    // `mysql … -pPASSWORD` (the password glued to `-p`).
    Rule {
        kind: SecretKind::Password,
        anchor: "(?:^|[ \t])(?:-u|--user)[ \t=]",
        pattern: "(?:^|[ \t])(?:-u|--user)[ \t=]+[\"']?[^ \t\r\n\"':@/]+:(?P<s>[^ \t\r\n\"']+)",
        accept: Accept::CommandPassword,
    },
    Rule {
        kind: SecretKind::Password,
        anchor: "(?i-u:mysql|mariadb|mysqldump|mysqladmin)",
        pattern: "(?i-u:mysql|mariadb|mysqldump|mysqladmin)[^\r\n]*?[ \t]-p(?P<s>[^ \t\r\n\"']+)",
        accept: Accept::CommandPassword,
    },
    // A password said in prose: "the password is …", "Password was: …".
    Rule {
        kind: SecretKind::Password,
        anchor: "(?i-u:passw(?:or)?d|pwd)[ \t]+(?i-u:is|was)",
        pattern: "(?i-u:passw(?:or)?d|pwd)[ \t]+(?i-u:is|was)[ \t]*:?[ \t]+[\"'`]?(?P<s>[^ \t\r\n\"'`,;]{8,})",
        accept: Accept::CommandPassword,
    },
    Rule {
        kind: SecretKind::AssignedSecret,
        anchor: "(?i-u:key|token|secret|passw|pwd|pass|pw|auth|cred)[A-Za-z0-9_.-]*\\\\?[\"'`]?[ \t]*[:=]",
        pattern: "(?P<name>[A-Za-z0-9_.-]*(?i-u:key|token|secret|passw(?:or)?d|pwd|pass|pw|auth|credential|cred)\
                  [A-Za-z0-9_.-]*)\\\\?[\"'`]?[ \t]*(?P<sep>=>|:=|=|:)[ \t]*(?P<quote>\\\\?[\"'`]?)\
                  (?P<s>[^ \t\r\n\"'`,;&\\\\]{8}[^ \t\r\n\"'`,;&\\\\]*)",
        accept: Accept::Assigned,
    },
];

/// The rules compiled: their anchors together as the prefilter, and each rule's pattern.
struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| Compiled {
    set: RegexSet::new(RULES.iter().map(|rule| rule.anchor)).expect("the anchors compile"),
    each: (RULES.iter())
        .map(|rule| Regex::new(rule.pattern).expect("a secret pattern compiles"))
        .collect(),
});

/// No credential is shorter than this many bytes.
const SHORTEST: usize = 8;

/// The rules whose anchor is somewhere in `text`, by index: one scan of `text`.
pub(super) fn candidate_rules(text: &str) -> impl Iterator<Item = usize> {
    let matched = (text.len() >= SHORTEST).then(|| COMPILED.set.matches(text));
    matched.into_iter().flatten()
}

/// A rejected assigned value at most this long is searched again from its start, so that
/// `otpauth://x?secret=…` (first matched as the name `otpauth` and a URL value) is not
/// skipped; a longer one is skipped whole, keeping the search linear.
const RESCAN_WITHIN: usize = 256;

/// The accepted matches of rule `rule` in `text`, in order.
pub(super) fn matches(rule: usize, text: &str) -> impl Iterator<Item = SecretMatch> + '_ {
    let (spec, regex) = (&RULES[rule], &COMPILED.each[rule]);
    let (mut from, mut end_markers) = (0, private_key::EndMarkers::default());
    std::iter::from_fn(move || {
        while from < text.len() {
            let caps = regex.captures_at(text, from)?;
            let whole = caps.get_match();
            from = whole.end().max(from + 1);
            if let Some(found) = accept(spec, text, &caps, &mut end_markers) {
                return Some(found);
            }
            if let (Accept::Assigned, Some(value)) = (&spec.accept, caps.name("s"))
                && value.len() <= RESCAN_WITHIN
            {
                from = value.start();
            }
        }
        None
    })
}

/// `caps` as a credential of `rule`, or `None` when the rule's checks reject it.
fn accept(
    rule: &Rule,
    text: &str,
    caps: &Captures<'_>,
    end_markers: &mut private_key::EndMarkers,
) -> Option<SecretMatch> {
    let whole = caps.get_match();
    let secret = caps.name("s").unwrap_or(whole);
    let (kind, range) = match rule.accept {
        Accept::Token { extra, check } => {
            // A pattern naming its token (group `s`) matched the token's left context itself.
            let own_left = caps.name("s").is_some();
            let glued = |at: usize| {
                (text.as_bytes().get(at)).is_some_and(|&b| {
                    b.is_ascii_alphanumeric() || b == b'_' || extra.as_bytes().contains(&b)
                })
            };
            // On its left a token may follow an identifier's `_` (`aws_AKIA…`, `token_ghp_…`):
            // a name joined to a key is still the key. A letter or digit there is another word.
            let left_glued = !own_left
                && secret.start() > 0
                && text.as_bytes()[secret.start() - 1] != b'_'
                && glued(secret.start() - 1);
            if left_glued || glued(secret.end()) || !check(secret.as_str()) {
                return None;
            }
            (rule.kind, secret.range())
        }
        Accept::PrivateKey => (
            rule.kind,
            whole.start()..private_key::private_key_end(text, whole.end(), end_markers)?,
        ),
        Accept::UrlPassword => {
            let user = caps.name("user").map_or("", |user| user.as_str());
            if values::url_placeholder(user, secret.as_str()) {
                return None;
            }
            (rule.kind, secret.range())
        }
        Accept::AuthHeader => {
            let scheme = caps.name("scheme").map_or("", |scheme| scheme.as_str());
            let value = values::trim_value(secret.as_str());
            if !values::auth_credentials(scheme, value) {
                return None;
            }
            (rule.kind, secret.start()..secret.start() + value.len())
        }
        Accept::CommandPassword => {
            let value = values::trim_value(secret.as_str());
            if !values::assigned_value(value, true) {
                return None;
            }
            (rule.kind, secret.start()..secret.start() + value.len())
        }
        Accept::Assigned => {
            let name = caps.name("name")?;
            if text[..name.start()].ends_with("://") {
                // A URL's user name, as in `https://x-access-token:TOKEN@host`.
                return None;
            }
            let password = values::name_kind(name.as_str())? == values::NameKind::Password;
            let value = values::trim_value(secret.as_str());
            let typed = caps.name("sep").is_some_and(|sep| sep.as_str() == ":")
                && caps.name("quote").is_some_and(|quote| quote.is_empty())
                && values::type_annotation(&text[secret.start() + value.len()..]);
            if typed || !values::assigned_value(value, password) {
                return None;
            }
            let kind = if password {
                SecretKind::Password
            } else {
                SecretKind::AssignedSecret
            };
            (kind, secret.start()..secret.start() + value.len())
        }
    };
    Some(SecretMatch { kind, range })
}
