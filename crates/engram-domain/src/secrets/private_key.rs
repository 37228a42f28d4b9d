//! Private-key blocks: from a `-----BEGIN … PRIVATE KEY-----` header through its `END` line,
//! or through the base64 lines that follow it when the block is cut short.

/// The most bytes after a private-key header searched for its `END` line or base64 lines: a
/// 4096-bit PGP secret key block is about 7 KiB.
const KEY_BLOCK_REACH: usize = 16 * 1024;

/// Where the next `-----END` marker of a text is, remembered across the text's private-key
/// headers (met in order) so that many headers without an `END` cost one search, not one each.
#[derive(Default)]
pub(super) struct EndMarkers {
    /// Whether the text was searched yet.
    searched: bool,
    /// The last search's answer: the marker's offset, or `None` when the rest of the text
    /// has none.
    next: Option<usize>,
}

impl EndMarkers {
    /// The offset of the first `-----END` at or after `at`.
    fn after(&mut self, text: &str, at: usize) -> Option<usize> {
        let stale = !self.searched || self.next.is_some_and(|found| found < at);
        if stale {
            self.next = text[at..].find("-----END").map(|i| at + i);
            self.searched = true;
        }
        self.next
    }
}

/// Where the private-key block whose header ends at `header_end` ends: after its
/// `-----END … PRIVATE KEY…-----` line when one follows within [`KEY_BLOCK_REACH`], else
/// after the base64 (and `Proc-Type:`-style header) lines that follow the header, real line
/// breaks or `\n` escapes (a key inside JSON) alike. `None` when the block holds no key
/// material (a run of 24 base64 characters), as when prose names the header.
pub(super) fn private_key_end(
    text: &str,
    header_end: usize,
    end_markers: &mut EndMarkers,
) -> Option<usize> {
    let mut end = None;
    if let Some(at) = end_markers.after(text, header_end)
        && at - header_end <= KEY_BLOCK_REACH
    {
        let after = &text[at + 8..];
        let label = &after.as_bytes()[..after.len().min(45)];
        if let Some(close) = label.windows(5).position(|w| w == b"-----")
            && after[..close].contains("PRIVATE KEY")
        {
            end = Some((at, at + 8 + close + 5));
        }
    }
    let (body_end, end) = end.unwrap_or_else(|| {
        let mut reach = (header_end + KEY_BLOCK_REACH).min(text.len());
        while !text.is_char_boundary(reach) {
            reach -= 1;
        }
        let end = header_end + key_lines_end(&text[header_end..reach]);
        (end, end)
    });
    let body = &text.as_bytes()[header_end..body_end];
    let key_material = (body
        .split(|&b| !(b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')))
    .any(|run| run.len() >= 24);
    key_material.then_some(end)
}

/// How far the base64 lines at the start of `rest` run: words of base64 (16 characters or
/// more, or ending `=`) and `Name: value` header lines, up to any other word or the next
/// `-----` marker.
fn key_lines_end(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let (mut at, mut end, mut header_line) = (0, 0, false);
    while at < bytes.len() {
        // Separators: white space and the escapes `\n`, `\r`, `\t`.
        match bytes[at] {
            b' ' | b'\t' => at += 1,
            b'\n' | b'\r' => (at, header_line) = (at + 1, false),
            b'\\' if matches!(bytes.get(at + 1), Some(b'n' | b'r' | b't')) => {
                header_line &= bytes[at + 1] == b't';
                at += 2;
            }
            _ => {
                // The word runs to the next separator; a stray `\\` is part of it.
                let len = 1
                    + (bytes[at + 1..].iter())
                        .position(|&b| b.is_ascii_whitespace() || b == b'\\')
                        .unwrap_or(bytes.len() - at - 1);
                let word = &rest[at..at + len];
                let base64 = word
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
                let field = word.len() > 1
                    && word.ends_with(':')
                    && word[..word.len() - 1]
                        .bytes()
                        .all(|b| b.is_ascii_alphabetic() || b == b'-');
                let marker = word.contains("-----");
                if marker
                    || !(header_line
                        || field
                        || (base64 && (word.len() >= 16 || word.ends_with('='))))
                {
                    break;
                }
                header_line |= field;
                at += len;
                end = at;
            }
        }
    }
    end
}
