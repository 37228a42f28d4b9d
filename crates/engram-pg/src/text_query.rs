//! A search's full-text query: the query's lexemes (PostgreSQL's `english` configuration),
//! each weighted by how rare it is among the observations.
//!
//! `ts_rank` scores a word by how often it occurs in a text but not by how rare it is, so a
//! word most texts hold ranked as high as the rare word a question is about. Here each lexeme
//! gets BM25's inverse document frequency ([`words::idf`]) from the share of observations
//! that hold it, read from the statistics ANALYZE keeps (`pg_stats.most_common_elem_freqs` of
//! `content_tsv`, over all workspaces; the store analyzes after bulk writes,
//! `statistics.rs`), and a text's score is the sum over lexemes of weight × `ts_rank` of that
//! lexeme alone. A lexeme rarer than any the statistics list counts as holding half the
//! share of the rarest listed one; without statistics (a table never analyzed) every lexeme
//! weighs 1. A lexeme the statistics say more than [`words::FREQUENT_TERM_RANKED`]
//! observations hold is searched apart ([`TextQuery::frequent`]), so that the search ranks
//! only its first matches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deadpool_postgres::GenericClient;
use engram_domain::Result;
use engram_domain::search::words;
use tokio_postgres::types::ToSql;

use crate::error::db;

/// The distinct lexemes of `$1` and the table's estimated rows (−1 before its first ANALYZE).
const LEXEMES: &str = "
SELECT ARRAY(SELECT DISTINCT l
             FROM unnest(tsvector_to_array(to_tsvector('english', engram_with_cjk($1)))) AS l
             ORDER BY l),
       (SELECT reltuples FROM pg_class WHERE oid = 'observations'::regclass)";

/// The statistics of `content_tsv`: its most common lexemes and their shares (the shares end
/// with the smallest and the largest of them, paired with no lexeme), none before the first
/// ANALYZE, and the table's estimated rows.
const SHARES: &str = "
SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs,
       (SELECT reltuples FROM pg_class WHERE oid = 'observations'::regclass)
FROM (SELECT 1) one
LEFT JOIN pg_stats s ON s.schemaname = current_schema() AND s.tablename = 'observations'
                    AND s.attname = 'content_tsv'";

/// How long the statistics read for one search serve the next ones while the table's
/// estimated rows stay the same (an ANALYZE that finds other rows replaces them at once).
const SHARES_KEPT: Duration = Duration::from_secs(30);

/// The lexeme shares the statistics list, kept by the store between searches: reading them
/// costs half a millisecond (a cast of a thousand lexemes), a search's lexemes a tenth.
#[derive(Debug, Default)]
pub(crate) struct SharesCache(Mutex<Option<Arc<Shares>>>);

#[derive(Debug)]
struct Shares {
    listed: HashMap<String, f32>,
    /// The smallest listed share; `None` without statistics.
    rarest: Option<f32>,
    /// The table's estimated rows when they were read.
    rows: f32,
    read_at: Instant,
}

impl SharesCache {
    /// The kept shares when they are fresh and were read at `rows` estimated rows.
    fn fresh(&self, rows: f32) -> Option<Arc<Shares>> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.as_ref()
            .filter(|s| s.rows == rows && s.read_at.elapsed() < SHARES_KEPT)
            .cloned()
    }

    async fn read(&self, client: &impl GenericClient) -> Result<Arc<Shares>> {
        let statement = client.prepare_cached(SHARES).await.map_err(db)?;
        let row = client.query_one(&statement, &[]).await.map_err(db)?;
        let elems: Vec<String> = row.get::<_, Option<_>>(0).unwrap_or_default();
        let freqs: Vec<f32> = row.get::<_, Option<_>>(1).unwrap_or_default();
        let rarest = (freqs.len() >= 2).then(|| freqs[freqs.len() - 2]);
        let shares = Arc::new(Shares {
            listed: elems.into_iter().zip(freqs).collect(),
            rarest,
            rows: row.get(2),
            read_at: Instant::now(),
        });
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(shares.clone());
        Ok(shares)
    }
}

/// The weighted lexemes of one query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextQuery {
    /// Each lexeme as `tsquery` input (quoted) with its weight.
    terms: Vec<(String, f64)>,
    /// Which of `terms` are frequent ([`words::is_frequent_term`]).
    frequent: Vec<bool>,
}

impl TextQuery {
    /// The lexemes of `text` less the very common ones ([`words::is_common_term`]), unless
    /// every lexeme is one; `None` when `text` has no lexeme (only stop words).
    pub(crate) async fn of(
        client: &impl GenericClient,
        text: &str,
        cache: &SharesCache,
    ) -> Result<Option<Self>> {
        let statement = client.prepare_cached(LEXEMES).await.map_err(db)?;
        let row = client.query_one(&statement, &[&text]).await.map_err(db)?;
        let (lexemes, rows): (Vec<String>, f32) = (row.get(0), row.get(1));
        if lexemes.is_empty() {
            return Ok(None);
        }
        let shares = match cache.fresh(rows) {
            Some(shares) => shares,
            None => cache.read(client).await?,
        };
        let lexemes = lexemes.into_iter().map(|text| Lexeme {
            share: shares.listed.get(&text).copied(),
            rarest: shares.rarest,
            rows: shares.rows,
            text,
        });
        Ok(Self::weigh(lexemes.collect()))
    }

    fn weigh(lexemes: Vec<Lexeme>) -> Option<Self> {
        let weighed: Vec<(String, Weight)> = (lexemes.into_iter())
            .map(|lexeme| (quoted(&lexeme.text), lexeme.weight()))
            .collect();
        let rare = weighed.iter().any(|(_, weight)| !weight.common);
        let kept = (weighed.into_iter()).filter(|(_, weight)| !rare || !weight.common);
        let (terms, frequent) = kept
            .map(|(term, weight)| ((term, weight.idf), weight.frequent))
            .unzip();
        let query = Self { terms, frequent };
        (!query.terms.is_empty()).then_some(query)
    }

    /// Any of the lexemes, as `tsquery` input: what a text must match.
    pub(crate) fn any(&self) -> String {
        self.joined(|_| true).unwrap_or_default()
    }

    /// Any of the lexemes that are not frequent, as `tsquery` input; `None` when all are.
    /// Every text matching it is ranked.
    pub(crate) fn rare(&self) -> Option<String> {
        self.joined(|frequent| !frequent)
    }

    /// Each frequent lexeme ([`words::is_frequent_term`]) as `tsquery` input. A search ranks
    /// the first [`words::FREQUENT_TERM_RANKED`] texts matching each that match neither
    /// [`TextQuery::rare`] nor a frequent lexeme before it.
    pub(crate) fn frequent(&self) -> Vec<&str> {
        self.lexemes(|frequent| frequent)
    }

    /// The lexemes (as `tsquery` input) whose frequency passes `keep`.
    fn lexemes(&self, keep: impl Fn(bool) -> bool) -> Vec<&str> {
        (self.terms.iter().zip(&self.frequent))
            .filter(|(_, frequent)| keep(**frequent))
            .map(|((term, _), _)| term.as_str())
            .collect()
    }

    fn joined(&self, keep: impl Fn(bool) -> bool) -> Option<String> {
        let terms = self.lexemes(keep);
        (!terms.is_empty()).then(|| terms.join(" | "))
    }

    /// The SQL expression of a text's score against `tsvector` (a column), its parameters
    /// numbered from `$first` (appended by [`TextQuery::parameters`] in the same order).
    pub(crate) fn rank(&self, tsvector: &str, first: usize) -> String {
        let terms = (0..self.terms.len()).map(|i| {
            let (weight, term) = (first + 2 * i, first + 2 * i + 1);
            format!("${weight}::float8 * ts_rank({tsvector}, ${term}::text::tsquery)")
        });
        format!("({})", terms.collect::<Vec<_>>().join(" + "))
    }

    /// Appends the parameters of [`TextQuery::rank`] to `parameters`.
    pub(crate) fn parameters<'a>(&'a self, parameters: &mut Vec<&'a (dyn ToSql + Sync)>) {
        for (term, weight) in &self.terms {
            parameters.push(weight);
            parameters.push(term);
        }
    }
}

/// One lexeme of a query as the statistics see it.
struct Lexeme {
    text: String,
    share: Option<f32>,
    rarest: Option<f32>,
    rows: f32,
}

/// What the statistics say of one lexeme.
struct Weight {
    /// Its weight in a text's score.
    idf: f64,
    /// Too common to search by ([`words::is_common_term`]).
    common: bool,
    /// Held by so many texts that only the first are ranked ([`words::is_frequent_term`]).
    frequent: bool,
}

impl Lexeme {
    fn weight(&self) -> Weight {
        let Some(rarest) = self.rarest.filter(|_| self.rows > 0.0) else {
            return Weight {
                idf: 1.0,
                common: false,
                frequent: false,
            };
        };
        let rows = f64::from(self.rows);
        let containing = f64::from(self.share.unwrap_or(rarest / 2.0)) * rows;
        Weight {
            idf: words::idf(rows, containing),
            common: words::is_common_term(rows, containing),
            // A lexeme the statistics do not list is rarer than any they do, whatever its
            // estimate: ranked in full.
            frequent: self.share.is_some() && words::is_frequent_term(containing),
        }
    }
}

/// `lexeme` quoted as `tsquery` input wants it: backslashes and quotes escaped.
fn quoted(lexeme: &str) -> String {
    format!("'{}'", lexeme.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexeme(text: &str, share: Option<f32>) -> Lexeme {
        Lexeme {
            text: text.to_owned(),
            share,
            rarest: Some(0.001),
            rows: 100_000.0,
        }
    }

    #[test]
    fn rare_lexemes_weigh_more_and_very_common_ones_are_left_out() {
        let query = TextQuery::weigh(vec![
            lexeme("widget", Some(0.9)),
            lexeme("gear", Some(0.01)),
            lexeme("sprocket", None),
        ])
        .unwrap();
        assert_eq!(query.any(), "'gear' | 'sprocket'");
        // 1 % of 100,000 texts is a thousand: every text holding either is ranked.
        assert_eq!(query.rare().as_deref(), Some("'gear' | 'sprocket'"));
        assert!(query.frequent().is_empty());
        let (gear, sprocket) = (query.terms[0].1, query.terms[1].1);
        assert!(sprocket > gear && gear > 1.0, "{query:?}");
        // Only common lexemes: they are kept, weighing next to nothing.
        let common = TextQuery::weigh(vec![lexeme("widget", Some(0.9))]).unwrap();
        assert_eq!(common.any(), "'widget'");
        assert_eq!((common.rare(), common.frequent()), (None, vec!["'widget'"]));
        assert_eq!(TextQuery::weigh(Vec::new()), None);
    }

    #[test]
    fn lexemes_in_more_texts_than_are_ranked_are_searched_apart() {
        let query = TextQuery::weigh(vec![
            lexeme("milo", Some(0.19)),
            lexeme("fazulo", Some(0.004)),
            lexeme("kalo", Some(0.03)),
        ])
        .unwrap();
        assert_eq!(query.rare().as_deref(), Some("'fazulo'"));
        assert_eq!(query.frequent(), ["'milo'", "'kalo'"]);
        // Unlisted, a lexeme is rarer than any listed one, however large the table.
        let unlisted = Lexeme {
            text: "xitura".to_owned(),
            share: None,
            rarest: Some(0.004),
            rows: 1_000_000.0,
        };
        assert_eq!(TextQuery::weigh(vec![unlisted]).unwrap().frequent, [false]);
        assert_eq!(query.any(), "'milo' | 'fazulo' | 'kalo'");
    }

    #[test]
    fn without_statistics_every_lexeme_weighs_one() {
        let unknown = Lexeme {
            text: "it's".to_owned(),
            share: None,
            rarest: None,
            rows: -1.0,
        };
        let query = TextQuery::weigh(vec![unknown]).unwrap();
        assert_eq!(query.terms, [("'it''s'".to_owned(), 1.0)]);
        assert_eq!(query.frequent, [false]);
        assert_eq!(
            query.rank("o.content_tsv", 4),
            "($4::float8 * ts_rank(o.content_tsv, $5::text::tsquery))"
        );
    }
}
