//! Late interaction: a query and an observation compared token by token, not only as two
//! mean vectors.
//!
//! A sentence model pools the vectors of a text's tokens into one; the pooled vector of "What
//! did Melanie paint recently?" is close to every observation about Melanie and painting.
//! Keeping the token vectors lets a search ask, for each word of the query, how well the
//! observation's best-matching token answers it (MaxSim, as in ColBERT, Khattab & Zaharia
//! 2020), which rewards an observation that covers every part of the question. The model
//! need not be trained for it: with all-MiniLM-L6-v2's own token vectors this signal alone
//! ranks LoCoMo's dev questions about as well as hybrid did before it (R@5 0.663 against
//! 0.675), and added to hybrid it raises R@5 from 0.675 to 0.681 on the facts mapping and
//! from 0.665 to 0.681 on the speakers mapping (BENCHMARKS.md).
//!
//! Only the *signs* of the token vectors are kept, one bit per dimension ([`pack_signs`]):
//! 48 bytes per token at 384 dimensions, about 1.2 kB per observation, less than its pooled
//! vector; two tokens are compared by the Hamming distance of their bits, and the ranking is
//! as good as with the full vectors (R@5 0.681 both). Only content tokens count
//! ([`is_content_piece`]): no stop words, punctuation or the model's markers.

/// Whether `piece`, a token of the model's vocabulary (a word or a word piece such as
/// `##ing`), carries content: it has a letter or digit, it is no marker such as `[CLS]`, and
/// it is no stop word ([`crate::words::is_stop_word`]).
pub fn is_content_piece(piece: &str) -> bool {
    let marker = piece.starts_with('[') && piece.ends_with(']');
    !marker && piece.chars().any(char::is_alphanumeric) && !crate::words::is_stop_word(piece)
}

/// The bytes one token takes in packed signs of `dims`-dimensional token vectors.
pub fn bytes_per_token(dims: usize) -> usize {
    dims.div_ceil(8)
}

/// Packs the signs of token vectors, token after token: [`bytes_per_token`] bytes each, bit
/// `i % 8` of byte `i / 8` set when dimension `i` is positive. Every vector must have `dims`
/// values (a shorter one leaves its missing bits clear).
pub fn pack_signs<'a>(dims: usize, tokens: impl IntoIterator<Item = &'a [f32]>) -> Vec<u8> {
    let width = bytes_per_token(dims);
    let mut packed = Vec::new();
    for token in tokens {
        let start = packed.len();
        packed.resize(start + width, 0);
        for (i, value) in token.iter().take(dims).enumerate() {
            if *value > 0.0 {
                packed[start + i / 8] |= 1 << (i % 8);
            }
        }
    }
    packed
}

/// How well `document` answers `query`, both packed signs of `dims`-dimensional token vectors
/// ([`pack_signs`]): for each query token, the best agreement of its signs with a document
/// token's (1 − 2 × Hamming distance / `dims`, from −1 to 1), averaged over the query's
/// tokens. `None` when either has no token or a length that is not whole tokens.
pub fn max_sim(query: &[u8], document: &[u8], dims: usize) -> Option<f64> {
    let width = bytes_per_token(dims);
    let whole = |signs: &[u8]| !signs.is_empty() && signs.len().is_multiple_of(width);
    if width == 0 || !whole(query) || !whole(document) {
        return None;
    }
    let mut sum = 0.0;
    for q in query.chunks_exact(width) {
        let nearest = (document.chunks_exact(width))
            .map(|d| hamming(q, d))
            .min()
            .unwrap_or(dims as u32);
        sum += 1.0 - 2.0 * f64::from(nearest) / dims as f64;
    }
    Some(sum / (query.len() / width) as f64)
}

/// The number of bits in which `a` and `b`, of one length, differ.
fn hamming(a: &[u8], b: &[u8]) -> u32 {
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let rest = (a_words.remainder().iter().zip(b_words.remainder()))
        .map(|(x, y)| (x ^ y).count_ones())
        .sum::<u32>();
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
    (a_words.zip(b_words))
        .map(|(x, y)| (word(x) ^ word(y)).count_ones())
        .sum::<u32>()
        + rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_pieces_are_words_and_word_pieces_that_are_not_stop_words() {
        for piece in ["painting", "##ing", "lgbt", "2023", "melanie"] {
            assert!(is_content_piece(piece), "{piece}");
        }
        for piece in ["[CLS]", "[SEP]", "[PAD]", "the", "did", ",", "?", "-"] {
            assert!(!is_content_piece(piece), "{piece}");
        }
    }

    #[test]
    fn signs_are_packed_a_bit_per_dimension() {
        let first = [1.0, -1.0, 0.5, 0.0, -0.2, 3.0, 1.0, -1.0, 2.0, -2.0];
        let second = [-1.0; 10];
        let packed = pack_signs(10, [&first[..], &second[..]]);
        assert_eq!(bytes_per_token(10), 2);
        // Dimensions 0, 2, 5, 6 and then 8 are positive; zero counts as not positive.
        assert_eq!(packed, [0b0110_0101, 0b0000_0001, 0, 0]);
    }

    #[test]
    fn max_sim_averages_each_query_tokens_best_match() {
        let dims = 64;
        let token = |positive: usize| {
            let v: Vec<f32> = (0..dims)
                .map(|i| if i < positive { 1.0 } else { -1.0 })
                .collect();
            v
        };
        let (a, b, c) = (token(64), token(32), token(0));
        let query = pack_signs(dims, [&a[..], &c[..]]);
        // `a` matches the first token exactly, `c` differs from `b` in 32 of 64 bits.
        let document = pack_signs(dims, [&a[..], &b[..]]);
        assert_eq!(max_sim(&query, &document, dims), Some((1.0 + 0.0) / 2.0));
        // A document holding both query tokens answers it fully; order does not matter.
        let both = pack_signs(dims, [&c[..], &b[..], &a[..]]);
        assert_eq!(max_sim(&query, &both, dims), Some(1.0));
        // Opposite signs everywhere: −1.
        assert_eq!(
            max_sim(
                &pack_signs(dims, [&a[..]]),
                &pack_signs(dims, [&c[..]]),
                dims
            ),
            Some(-1.0)
        );
    }

    #[test]
    fn max_sim_needs_whole_tokens_on_both_sides() {
        let one = pack_signs(16, [&[1.0; 16][..]]);
        assert_eq!(max_sim(&one, &[], 16), None);
        assert_eq!(max_sim(&[], &one, 16), None);
        assert_eq!(max_sim(&one, &one[..1], 16), None);
        assert_eq!(max_sim(&one, &one, 0), None);
        // A width that is not a whole number of 8-byte words.
        let odd = pack_signs(100, [&[1.0; 100][..]]);
        assert_eq!(odd.len(), 13);
        assert_eq!(max_sim(&odd, &odd, 100), Some(1.0));
    }
}
