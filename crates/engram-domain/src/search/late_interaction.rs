//! Late interaction: a query and an observation compared token by token, not only as two
//! mean vectors.
//!
//! A sentence model pools the vectors of a text's tokens into one; the pooled vector of "What
//! did Melanie paint recently?" is close to every observation about Melanie and painting.
//! Keeping the token vectors lets a search ask, for each word of the query, how well the
//! observation's best-matching token answers it (MaxSim, as in ColBERT, Khattab & Zaharia
//! 2020), which rewards an observation that covers every part of the question. The query's
//! tokens are weighted by how few of the search's candidates hold them ([`token_weights`]), so
//! the rare word a question is about outweighs the name most candidates share. The model need
//! not be trained for it: with all-MiniLM-L6-v2's own token vectors this signal alone ranks
//! LoCoMo's dev questions about as well as hybrid did before it (R@5 0.663 against 0.675),
//! and added to hybrid it raises R@5 from 0.675 to 0.692 on the facts mapping and from 0.665
//! to 0.690 on the speakers mapping (BENCHMARKS.md).
//!
//! Only the *signs* of the token vectors are kept, one bit per dimension ([`pack_signs`]):
//! 48 bytes per token at 384 dimensions, about 1.2 kB per observation, less than its pooled
//! vector; two tokens are compared by the Hamming distance of their bits, and the ranking is
//! as good as with the full vectors (R@5 0.681 both, tokens alike). Only content tokens count
//! ([`is_content_piece`]): no stop words, punctuation or the model's markers.

/// Whether `piece`, a token of the model's vocabulary (a word or a word piece such as
/// `##ing` of WordPiece, or `▁the` of SentencePiece, whose `▁` marks a word's start), carries
/// content: it has a letter or digit, it is no marker such as `[CLS]` or `<s>`, and it is no
/// stop word ([`crate::search::words::is_stop_word`], whatever its case).
pub fn is_content_piece(piece: &str) -> bool {
    let marker = (piece.starts_with('[') && piece.ends_with(']'))
        || (piece.starts_with('<') && piece.ends_with('>'));
    let word = piece.trim_start_matches('\u{2581}');
    !marker
        && word.chars().any(char::is_alphanumeric)
        && !crate::search::words::is_stop_word(&word.to_lowercase())
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

/// For each token of `query`, the best agreement of its signs with a token of `document`'s
/// (1 − 2 × Hamming distance / `dims`, from −1 to 1), both packed signs of `dims`-dimensional
/// token vectors ([`pack_signs`]). `None` when either has no token or a length that is not
/// whole tokens.
pub fn best_agreements(query: &[u8], document: &[u8], dims: usize) -> Option<Vec<f64>> {
    let width = bytes_per_token(dims);
    let whole = |signs: &[u8]| !signs.is_empty() && signs.len().is_multiple_of(width);
    if width == 0 || !whole(query) || !whole(document) {
        return None;
    }
    let agreements = (query.chunks_exact(width))
        .map(|q| {
            let nearest = (document.chunks_exact(width))
                .map(|d| hamming(q, d))
                .min()
                .unwrap_or(dims as u32);
            1.0 - 2.0 * f64::from(nearest) / dims as f64
        })
        .collect();
    Some(agreements)
}

/// How well `document` answers `query` (MaxSim): their [`best_agreements`] averaged over the
/// query's tokens, each weighing the same.
pub fn max_sim(query: &[u8], document: &[u8], dims: usize) -> Option<f64> {
    let agreements = best_agreements(query, document, dims)?;
    Some(agreements.iter().sum::<f64>() / agreements.len() as f64)
}

/// The agreement ([`best_agreements`]) from which a candidate counts as holding a query
/// token: the same word in another context agrees in 0.6 and more of its signs, a merely
/// related one less. On the LoCoMo dev split any threshold from 0.4 to 0.7 gave R@5 within
/// 0.006 of the best (BENCHMARKS.md).
pub const MATCH_AGREEMENT: f64 = 0.6;

/// The least weight a query token gets in [`token_weights`], so that a token every candidate
/// holds still counts a little.
pub const MIN_TOKEN_WEIGHT: f64 = 0.05;

/// Weights for the query's tokens from the candidates of one search, each candidate given by
/// its [`best_agreements`] (all of the query's length): a token's inverse document frequency
/// among the candidates, ln((candidates + 1) / (holding + 0.5)), where a candidate holds it
/// when its agreement reaches [`MATCH_AGREEMENT`]; at least [`MIN_TOKEN_WEIGHT`]. A word most
/// candidates share (the person every question about her names, a project's name) then
/// counts for less than the rare word the question is about, as in bm25; the store keeps no
/// document frequency per token, and the candidates are the observations that matter.
pub fn token_weights(candidates: &[&[f64]]) -> Vec<f64> {
    let tokens = candidates.first().map_or(0, |c| c.len());
    let total = candidates.len() as f64;
    (0..tokens)
        .map(|t| {
            let holding = (candidates.iter())
                .filter(|c| c.get(t).is_some_and(|a| *a >= MATCH_AGREEMENT))
                .count() as f64;
            ((total + 1.0) / (holding + 0.5)).ln().max(MIN_TOKEN_WEIGHT)
        })
        .collect()
}

/// The mean of `agreements` weighted by `weights` (as many; [`token_weights`]).
pub fn weighted_mean(agreements: &[f64], weights: &[f64]) -> f64 {
    let total: f64 = weights.iter().sum();
    let sum: f64 = agreements.iter().zip(weights).map(|(a, w)| a * w).sum();
    if total > 0.0 { sum / total } else { 0.0 }
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
        let sentence_pieces = ["\u{2581}Melanie", "anie", "\u{2581}北京", "\u{2581}Straße"];
        for piece in ["painting", "##ing", "lgbt", "2023", "melanie"]
            .into_iter()
            .chain(sentence_pieces)
        {
            assert!(is_content_piece(piece), "{piece}");
        }
        let markers = [
            "<s>",
            "</s>",
            "<pad>",
            "\u{2581}",
            "\u{2581}The",
            "\u{2581},",
        ];
        for piece in ["[CLS]", "[SEP]", "[PAD]", "the", "did", ",", "?", "-"]
            .into_iter()
            .chain(markers)
        {
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
    fn tokens_most_candidates_hold_weigh_less() {
        // Three candidates; the first query token is held by all (a name every observation
        // carries), the second by one.
        let candidates: [&[f64]; 3] = [&[0.9, 0.8], &[0.7, 0.1], &[0.65, -0.2]];
        let weights = token_weights(&candidates);
        let expected = [(4.0_f64 / 3.5).ln(), (4.0_f64 / 1.5).ln()];
        assert!((weights[0] - expected[0]).abs() < 1e-12, "{weights:?}");
        assert!((weights[1] - expected[1]).abs() < 1e-12, "{weights:?}");
        // The first candidate answers the rare token: it gains on the others.
        let means: Vec<f64> = candidates
            .iter()
            .map(|c| weighted_mean(c, &weights))
            .collect();
        assert!(means[0] - means[1] > (0.85 - 0.4) + 0.1, "{means:?}");
        // A token every one of many candidates holds keeps the least weight.
        let many = vec![&[1.0][..]; 100];
        assert_eq!(token_weights(&many), [MIN_TOKEN_WEIGHT]);
        assert!(token_weights(&[]).is_empty());
        assert_eq!(weighted_mean(&[0.5], &[0.0]), 0.0);
    }

    #[test]
    fn max_sim_needs_whole_tokens_on_both_sides() {
        let one = pack_signs(16, [&[1.0; 16][..]]);
        assert_eq!(max_sim(&one, &[], 16), None);
        assert_eq!(best_agreements(&one, &[], 16), None);
        assert_eq!(max_sim(&[], &one, 16), None);
        assert_eq!(max_sim(&one, &one[..1], 16), None);
        assert_eq!(max_sim(&one, &one, 0), None);
        // A width that is not a whole number of 8-byte words.
        let odd = pack_signs(100, [&[1.0; 100][..]]);
        assert_eq!(odd.len(), 13);
        assert_eq!(max_sim(&odd, &odd, 100), Some(1.0));
    }
}
