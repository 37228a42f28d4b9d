//! Words as full-text search sees them, and term proximity: whether a text has a question's
//! words next to each other ("support group", "connection pool"), which bm25, counting each
//! word on its own, cannot tell.
//!
//! A word is a run of letters and digits, lower-cased. Stop words are the Snowball English
//! list that PostgreSQL's `english` configuration drops (SQLite's full-text queries drop the
//! same, [`is_stop_word`]); stems are Snowball English (Porter2).

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};

/// Words that full-text queries drop, one per line or space: they occur nearly everywhere and
/// would rank every observation.
const STOP_WORDS: &str = include_str!("stop_words.txt");

/// How far apart (in words, stop words counted) two query terms may stand in a text and still
/// count as a pair: next to each other, or with one word between ("support *the* group",
/// "pool *of* connections" does not count: order matters).
pub const PROXIMITY_WINDOW: usize = 2;

/// A full-text query leaves out a term that more than half of all observations contain, and
/// more than this many, unless every term of the query is such a term. bm25 (and
/// PostgreSQL's weighting by [`idf`]) gives a word in half the documents no weight, so ranking
/// is unchanged, but every observation holding it would be a match to rank: a question with
/// "entity" in a store where every text says "entity" ranked all 100,000 observations (426 ms
/// on PostgreSQL). Below this many matches ranking them all costs about a millisecond, and
/// smaller stores keep every word without counting any.
pub const COMMON_TERM_FLOOR: i64 = 2_000;

/// A term more observations hold than this (by the store's estimate) is a frequent term: a
/// search ranks only the first this many texts holding it, in storage order, rather than all
/// of them. Ranking every match of a word in a fifth of a million texts visits a fifth of the
/// table (655 ms on PostgreSQL) only to order matches that tie but for repeats of the word,
/// and such a term weighs little ([`idf`]). Rarer terms are always ranked in full, so a text
/// holding any of them is never left out. PostgreSQL ranks each frequent term's first matches
/// beside the rarer terms' (a branch per term); SQLite, whose FTS5 weighs a term by a pass over
/// all its matches, leaves frequent terms out of a query that has rarer ones, and ranks the
/// first this many matches of a query of frequent terms alone.
pub const FREQUENT_TERM_RANKED: i64 = 2_000;

/// Whether a term that about `containing` observations hold is ranked over its first
/// [`FREQUENT_TERM_RANKED`] matches only.
pub fn is_frequent_term(containing: f64) -> bool {
    containing > FREQUENT_TERM_RANKED as f64
}

/// BM25's inverse document frequency of a term that `containing` of `rows` documents hold:
/// ln((rows − containing + 0.5) / (containing + 0.5)), at least 1e-6 (as SQLite's FTS5 has
/// it), so a term in half the documents or more weighs next to nothing and a rare one most.
/// Shapes: both counts ≥ 0 (estimates may be fractional); the result is > 0.
pub fn idf(rows: f64, containing: f64) -> f64 {
    ((rows - containing + 0.5) / (containing + 0.5))
        .ln()
        .max(1e-6)
}

/// Whether a term that `containing` of `rows` observations hold is too common to search by:
/// more than half of them and more than [`COMMON_TERM_FLOOR`]. Counts may be estimates.
pub fn is_common_term(rows: f64, containing: f64) -> bool {
    containing * 2.0 > rows && containing > COMMON_TERM_FLOOR as f64
}

/// The fewest of `rows` observations that make a term common ([`is_common_term`]): a store
/// that counts a term's matches can stop there. Larger than `rows` when no term can be.
pub fn common_term_count(rows: i64) -> i64 {
    (rows / 2 + 1).max(COMMON_TERM_FLOOR + 1)
}

/// Whether `word` (lower-case) is a stop word.
pub fn is_stop_word(word: &str) -> bool {
    // A set, not a scan of the list: a grouping of long facts asks for every word.
    static SET: std::sync::LazyLock<std::collections::HashSet<&str>> =
        std::sync::LazyLock::new(|| STOP_WORDS.split_whitespace().collect());
    SET.contains(word)
}

/// The words of `text`, lower-cased, in order.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The names `query` mentions: its words written with a capital but the first (which a
/// sentence capitalises anyway), "I" and acronyms (two or more letters, all capitals: "PR",
/// "UI", "GPU" are terms a text spells out as often as not), lower-cased, each once. "What
/// did Caroline paint in May?" names `caroline` and `may`.
pub fn proper_nouns(query: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let written = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty());
    for word in written.skip(1) {
        let capital = word.chars().next().is_some_and(char::is_uppercase);
        let acronym = word.chars().count() >= 2 && !word.chars().any(char::is_lowercase);
        let name = word.to_lowercase();
        if capital && !acronym && word != "I" && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Whether `c` is written without spaces between words: Chinese, Japanese or Korean (Han
/// ideographs, hiragana, katakana, Hangul syllables). A run of them, written without spaces,
/// is one token to both stores' full-text tokenizers (and part of one word to [`words`]).
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3005}'                     // 々, the repetition mark
        | '\u{3041}'..='\u{3096}'     // hiragana
        | '\u{309d}'..='\u{309f}'     // hiragana iteration marks
        | '\u{30a1}'..='\u{30fa}'     // katakana (not the middle dot ・)
        | '\u{30fc}'..='\u{30ff}'     // prolonged sound and iteration marks
        | '\u{3400}'..='\u{4dbf}'     // Han, extension A
        | '\u{4e00}'..='\u{9fff}'     // Han
        | '\u{f900}'..='\u{faff}'     // Han compatibility
        | '\u{ac00}'..='\u{d7af}'     // Hangul syllables
        | '\u{20000}'..='\u{2fa1f}') // Han, extensions B and later
}

/// `text` followed by the overlapping pairs of characters of each of its runs of
/// [`is_cjk`] characters ("東京に住む" adds "東京 京に に住 住む"; a lone character adds
/// itself), space-separated; `text` itself when it has none. Both stores index an
/// observation's text so (SQLite's `engram_with_cjk`, PostgreSQL's SQL function of that name,
/// which must agree with this one) and search a query so: a Chinese or Japanese query
/// finds a text that shares its character pairs, where whole runs never match.
pub fn with_cjk_bigrams(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_cjk) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() * 3);
    out.push_str(text);
    let chars: Vec<char> = text.chars().collect();
    let mut start = 0;
    while start < chars.len() {
        if !is_cjk(chars[start]) {
            start += 1;
            continue;
        }
        let end = (start..chars.len())
            .find(|&i| !is_cjk(chars[i]))
            .unwrap_or(chars.len());
        let run = &chars[start..end];
        if run.len() == 1 {
            out.push(' ');
            out.push(run[0]);
        }
        for pair in run.windows(2) {
            out.push(' ');
            out.extend(pair);
        }
        start = end;
    }
    Cow::Owned(out)
}

/// A query's terms for proximity: its words ([`with_cjk_bigrams`] included) that are not stop
/// words, stemmed, each once, in the order they first appear.
pub fn query_terms(query: &str) -> Vec<String> {
    let stemmer = Stemmer::create(Algorithm::English);
    let mut terms: Vec<String> = Vec::new();
    for word in words(&with_cjk_bigrams(query)).filter(|w| !is_stop_word(w)) {
        let stem = stemmer.stem(&word).into_owned();
        if !terms.contains(&stem) {
            terms.push(stem);
        }
    }
    terms
}

/// The stems of `text`'s words ([`with_cjk_bigrams`] included), in order, as [`query_terms`]
/// stems a query's.
pub fn stems(text: &str) -> Vec<String> {
    let stemmer = Stemmer::create(Algorithm::English);
    (words(&with_cjk_bigrams(text)))
        .map(|w| stemmer.stem(&w).into_owned())
        .collect()
}

/// How many pairs of consecutive `terms` (from [`query_terms`]) stand in `text` in the same
/// order, at most [`PROXIMITY_WINDOW`] words apart. "When did Gina go to the dance class?"
/// has the pairs (gina, go), (go, danc), (danc, class); "Gina took a dance class" holds one.
pub fn proximity(terms: &[String], text: &str) -> usize {
    if terms.len() < 2 {
        return 0;
    }
    let stems = stems(text);
    terms
        .windows(2)
        .filter(|pair| {
            stems.iter().enumerate().any(|(i, first)| {
                *first == pair[0]
                    && (stems[i + 1..].iter().take(PROXIMITY_WINDOW)).any(|next| *next == pair[1])
            })
        })
        .count()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_query_names_its_capitalised_words_but_the_first() {
        assert_eq!(
            proper_nouns("What did Caroline paint in May? Caroline, I think"),
            ["caroline", "may"]
        );
        assert_eq!(proper_nouns("Lena's review"), Vec::<String>::new());
        assert_eq!(proper_nouns("how big may a PR be"), Vec::<String>::new());
        assert_eq!(proper_nouns("who looks at UI changes in QXmpp"), ["qxmpp"]);
    }

    #[test]
    fn chinese_and_japanese_runs_add_their_character_pairs() {
        assert_eq!(with_cjk_bigrams("plain words"), "plain words");
        assert_eq!(
            with_cjk_bigrams("東京に住む"),
            "東京に住む 東京 京に に住 住む"
        );
        assert_eq!(
            with_cjk_bigrams("Alice 在北京, 猫."),
            "Alice 在北京, 猫. 在北 北京 猫"
        );
        assert_eq!(with_cjk_bigrams("서울 날씨"), "서울 날씨 서울 날씨");
        assert_eq!(with_cjk_bigrams("人々・ビル"), "人々・ビル 人々 ビル");
    }

    use super::*;

    #[test]
    fn rare_terms_weigh_most_and_common_ones_next_to_nothing() {
        assert!(idf(1_000.0, 1.0) > idf(1_000.0, 10.0));
        assert!((idf(1_000.0, 1.0) - (999.5_f64 / 1.5).ln()).abs() < 1e-12);
        assert_eq!(idf(1_000.0, 600.0), 1e-6);
        assert_eq!(idf(0.0, 0.0), 1e-6);
        // A common term: in more than half, and more than the floor.
        assert!(is_common_term(100_000.0, 60_000.0));
        assert!(!is_common_term(100_000.0, 40_000.0));
        assert!(!is_common_term(3_000.0, 1_900.0));
        // The count agrees with the rule: the fewest that are common.
        for rows in [0, 10, 3_000, 4_001, 4_002, 100_000] {
            let count = common_term_count(rows);
            assert!(is_common_term(rows as f64, count as f64), "{rows}");
            assert!(!is_common_term(rows as f64, (count - 1) as f64), "{rows}");
        }
    }

    #[test]
    fn query_terms_are_stemmed_without_stop_words_each_once() {
        assert_eq!(
            query_terms("When did the dancers go dancing at the Dance Class?"),
            ["dancer", "go", "danc", "class"]
        );
        assert!(query_terms("what is it?").is_empty());
        assert!(is_stop_word("the") && !is_stop_word("pool"));
    }

    #[test]
    fn proximity_counts_ordered_pairs_at_most_two_words_apart() {
        let terms = query_terms("connection pool timeout");
        assert_eq!(proximity(&terms, "The connection pool has a timeout"), 1);
        assert_eq!(proximity(&terms, "connection pools: timeout"), 2);
        assert_eq!(
            proximity(&terms, "a connection in the pool"),
            0,
            "three words apart"
        );
        assert_eq!(
            proximity(&terms, "pool of connections, timeout"),
            0,
            "order matters"
        );
        assert_eq!(
            proximity(&terms, "connection, then pool"),
            1,
            "one word between"
        );
        assert_eq!(
            proximity(&query_terms("pool"), "pool pool"),
            0,
            "one term has no pair"
        );
    }
}
