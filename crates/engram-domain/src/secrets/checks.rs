//! The checks a prefixed token must pass beyond its pattern: it must not be a documentation
//! placeholder (`XXXX…`, `1234567890…`), a JWT's header must be JSON, a Discord token's first
//! part a numeric id; and entropy, for these and for assigned values.

/// Shannon entropy of `s` over its characters, in bits per character.
pub(super) fn entropy(s: &str) -> f64 {
    let mut chars: Vec<char> = s.chars().collect();
    chars.sort_unstable();
    #[allow(clippy::cast_precision_loss, reason = "lengths are far below 2^52")]
    let total = chars.len() as f64;
    (chars.chunk_by(|a, b| a == b))
        .map(|run| {
            #[allow(clippy::cast_precision_loss, reason = "lengths are far below 2^52")]
            let p = run.len() as f64 / total;
            -p * p.log2()
        })
        .sum()
}

/// Whether `s` has a run of six characters counting up (`123456`, `abcdef`), as
/// documentation's made-up tokens do and random ones practically never.
pub(super) fn counts_up(s: &str) -> bool {
    let mut run = 1;
    let mut previous = None;
    for c in s.chars() {
        run = if previous.and_then(|p: char| char::from_u32(u32::from(p) + 1)) == Some(c) {
            run + 1
        } else {
            1
        };
        if run >= 6 {
            return true;
        }
        previous = Some(c);
    }
    false
}

/// Whether a token's random part varies: not `XXXXXXXX`, `00000000`, a run of six equal
/// characters or six counting up (`ghp_1234567890abcdef…`), as documentation placeholders
/// are.
pub(super) fn varied(token: &str) -> bool {
    let body = token
        .rsplit(['_', '-', '/', '.', ':', '='])
        .find(|part| part.len() >= 8)
        .unwrap_or(token);
    let mut distinct: Vec<char> = body.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    !repeats(body) && distinct.len() >= (body.chars().count() / 4).clamp(3, 8) && !counts_up(body)
}

/// A webhook URL whose secret (its last path segment) is no placeholder.
pub(super) fn webhook(url: &str) -> bool {
    url.rsplit('/')
        .next()
        .is_some_and(|secret| secret.len() >= 16 && varied(secret))
}

/// An OpenAI key: varied, and the classic `sk-` form mixes upper case, lower case and digits.
pub(super) fn mixed_token(token: &str) -> bool {
    let classes = Classes::of(token);
    varied(token) && classes.upper > 0 && classes.lower > 0 && classes.digit > 0
}

/// A hex token (Twilio, Mailgun): letters and digits both, varied.
pub(super) fn hex_token(token: &str) -> bool {
    let classes = Classes::of(token);
    classes.digit > 0 && classes.lower > 1 && entropy(token) >= 3.0 && varied(token)
}

/// A Hugging Face token: random mixed case, not an identifier such as
/// `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`.
pub(super) fn huggingface(token: &str) -> bool {
    let body = &token[3..];
    let classes = Classes::of(body);
    classes.upper >= 6 && classes.lower >= 6 && entropy(body) >= 4.0
}

/// An AWS secret key: 40 random base64 characters.
pub(super) fn aws_secret(value: &str) -> bool {
    let classes = Classes::of(value);
    let kinds = usize::from(classes.upper > 0)
        + usize::from(classes.lower > 0)
        + usize::from(classes.digit > 0);
    kinds >= 2 && entropy(value) >= 3.5 && varied(value)
}

/// A Discord bot token, whose first part is the bot's numeric id in base64.
pub(super) fn discord_token(token: &str) -> bool {
    let id = token.split('.').next().and_then(base64_decode);
    id.is_some_and(|id| id.len() >= 15 && id.iter().all(u8::is_ascii_digit)) && varied(token)
}

/// A JWT whose header decodes to a JSON object naming `alg` or `typ` (a space before its
/// dot is not the header's).
pub(super) fn jwt(token: &str) -> bool {
    let header = (token.split('.').next())
        .and_then(|header| base64_decode(header.trim_end_matches([' ', '\t'])));
    header.is_some_and(|header| {
        let header = String::from_utf8_lossy(&header);
        header.starts_with('{') && (header.contains("\"alg\"") || header.contains("\"typ\""))
    })
}

/// A Google OAuth access token, `ya29.` and a random part mixing upper case, lower case and
/// digits: not `ya29.xxxx…` nor `ya29.YOUR_ACCESS_TOKEN_HERE`. (The prefix names the
/// credential, so a documentation token counting up is found like a real one.)
pub(super) fn google_oauth(token: &str) -> bool {
    let body = token.rsplit('.').next().unwrap_or(token);
    let classes = Classes::of(body);
    classes.upper >= 2
        && classes.lower >= 2
        && classes.digit > 0
        && entropy(body) >= 4.0
        && !repeats(body)
}

/// A shared access signature (`sig=`): percent-decoded, base64 of at least 24 bytes (an
/// HMAC-SHA256 is 32), varied.
pub(super) fn sas_signature(value: &str) -> bool {
    let decoded = super::values::percent_decoded(value);
    base64_decode(&decoded).is_some_and(|bytes| bytes.len() >= 24) && varied(&decoded)
}

/// Whether `s` has a run of six equal characters.
fn repeats(s: &str) -> bool {
    let mut run = 0;
    let mut previous = None;
    for c in s.chars() {
        run = if previous == Some(c) { run + 1 } else { 1 };
        if run >= 6 {
            return true;
        }
        previous = Some(c);
    }
    false
}

/// Standard or URL-safe base64, padding optional; `None` when `s` is not base64.
pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut bits, mut held) = (0_u32, 0_u32);
    for b in s.bytes() {
        let value = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        bits = (bits << 6) | u32::from(value);
        held += 6;
        if held >= 8 {
            held -= 8;
            out.push(u8::try_from((bits >> held) & 0xff).ok()?);
        }
    }
    Some(out)
}

/// How many characters of each class a value has.
#[derive(Default)]
pub(super) struct Classes {
    pub(super) upper: usize,
    pub(super) lower: usize,
    pub(super) digit: usize,
    /// Punctuation other than `_`, `-` and `.`, which identifiers and versions use.
    pub(super) symbol: usize,
    /// Non-ASCII characters.
    pub(super) other: usize,
}

impl Classes {
    pub(super) fn of(s: &str) -> Self {
        let mut classes = Self::default();
        for c in s.chars() {
            match c {
                'A'..='Z' => classes.upper += 1,
                'a'..='z' => classes.lower += 1,
                '0'..='9' => classes.digit += 1,
                '_' | '-' | '.' => {}
                c if c.is_ascii() => classes.symbol += 1,
                _ => classes.other += 1,
            }
        }
        classes
    }

    pub(super) fn letters(&self) -> usize {
        self.upper + self.lower
    }
}
