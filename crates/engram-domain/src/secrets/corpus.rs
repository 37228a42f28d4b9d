//! The acceptance corpora, shared with the tests of every write path.

/// Fake credentials in real formats, for tests of every write path: one a line, the
/// expected [`label`](super::SecretKind::label) before a tab, then a text holding exactly one
/// credential of that kind (in a sentence, a config line, JSON, a URL, an env file, code).
/// A literal `\n` in a text stands for a line break (multi-line private keys), `\\` for
/// one backslash (a key inside JSON) and `\u{200B}` for that character (an invisible one);
/// [`secrets_corpus`] unescapes them. Blank lines and lines starting `#` are comments. None of
/// these credentials is real: the random parts are random.
pub const SECRETS_CORPUS: &str = include_str!("corpus/secrets.txt");

/// Ordinary technical text that holds no credential, for tests of every write path: one text
/// a line (hashes, UUIDs, base64 image data, digests, versions, URLs without or with
/// placeholder passwords, `token=$GITHUB_TOKEN`, public keys, code naming passwords and
/// keys, chat). Blank lines and lines starting `#` are comments ([`ordinary_corpus`]).
pub const ORDINARY_CORPUS: &str = include_str!("corpus/ordinary.txt");

/// [`SECRETS_CORPUS`]'s cases: each expected label and its text, with `\n` unescaped to a
/// line break, `\\` to a backslash and `\u{…}` to its character.
///
/// # Panics
/// When a line has no tab between label and text (a broken corpus).
pub fn secrets_corpus() -> impl Iterator<Item = (&'static str, String)> {
    corpus_lines(SECRETS_CORPUS).map(|line| {
        let (label, text) = line
            .split_once('\t')
            .expect("a corpus line is LABEL<tab>TEXT");
        (label, unescape(text))
    })
}

/// `text` with `\n` as a line break, `\\` as a backslash and `\u{…}` as the character of
/// that code point.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        let escaped = (c == '\\')
            .then(|| chars.as_str().strip_prefix("u{"))
            .flatten()
            .and_then(|rest| rest.split_once('}'))
            .and_then(|(hex, rest)| {
                Some((char::from_u32(u32::from_str_radix(hex, 16).ok()?)?, rest))
            });
        if let Some((escaped, rest)) = escaped {
            out.push(escaped);
            chars = rest.chars();
            continue;
        }
        match (c, chars.clone().next()) {
            ('\\', Some('n')) => {
                out.push('\n');
                chars.next();
            }
            ('\\', Some('\\')) => {
                out.push('\\');
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// [`ORDINARY_CORPUS`]'s texts.
pub fn ordinary_corpus() -> impl Iterator<Item = &'static str> {
    corpus_lines(ORDINARY_CORPUS)
}

/// `corpus`'s lines but blank ones and `#` comments.
fn corpus_lines(corpus: &'static str) -> impl Iterator<Item = &'static str> {
    (corpus.lines()).filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
}
