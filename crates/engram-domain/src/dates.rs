//! The dates a text names, as far as a search needs them: which months and years. A question
//! that names a month or a year ("what did we decide in March 2024?") prefers observations
//! dated then, by a date written in them or by when they were written ([`crate::fusion`]).
//!
//! Months count only as capitalised English names or their three-letter abbreviations
//! ("May", "Sept"), so the verb "may" is not a month, nor "May" opening a question unless a
//! number follows; years are four-digit numbers from 1900 to 2099; ISO dates (`2024-03-12`,
//! `2024-03`) give both.

use chrono::Datelike;

use crate::model::Timestamp;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The months (1–12) and years a text names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedDates {
    /// Months, 1–12.
    pub months: Vec<u32>,
    /// Years.
    pub years: Vec<i32>,
}

impl NamedDates {
    /// The months and years `text` names.
    pub fn of(text: &str) -> Self {
        let mut dates = Self::default();
        let words: Vec<&str> = (text.split(|c: char| !(c.is_alphanumeric() || c == '-')))
            .filter(|w| !w.is_empty())
            .collect();
        for (index, word) in words.iter().copied().enumerate() {
            // A capitalised first word is a month only beside a number ("May 2023", not
            // "May I ask…").
            let beside_number = words
                .get(index + 1)
                .is_some_and(|next| next.starts_with(|c: char| c.is_ascii_digit()));
            for part in word.split('-').filter(|p| !p.is_empty()) {
                if let Some(month) = month(part).filter(|_| index > 0 || beside_number) {
                    push(&mut dates.months, month);
                } else if let Some(year) = year(part) {
                    push(&mut dates.years, year);
                }
            }
            // ISO dates: YYYY-MM or YYYY-MM-DD.
            let mut parts = word.split('-');
            if let (Some(y), Some(m)) = (parts.next().and_then(year), parts.next())
                && m.len() == 2
                && let Ok(m @ 1..=12) = m.parse::<u32>()
            {
                push(&mut dates.years, y);
                push(&mut dates.months, m);
            }
        }
        dates
    }

    /// Whether nothing is named.
    pub fn is_empty(&self) -> bool {
        self.months.is_empty() && self.years.is_empty()
    }

    /// Whether an observation with text `content`, written at `created_at`, is dated as this
    /// (a question's dates) asks: one of its months if it names any, and one of its years if
    /// it names any, both from the text or both from the time it was written.
    pub fn match_observation(&self, content: &str, created_at: Timestamp) -> bool {
        if self.is_empty() {
            return false;
        }
        let written = Self {
            months: vec![created_at.month()],
            years: vec![created_at.year()],
        };
        [Self::of(content), written]
            .iter()
            .any(|dates| agrees(&self.months, &dates.months) && agrees(&self.years, &dates.years))
    }
}

/// Whether `has` holds one of `asked`, or nothing was asked.
fn agrees<T: PartialEq>(asked: &[T], has: &[T]) -> bool {
    asked.is_empty() || asked.iter().any(|a| has.contains(a))
}

fn push<T: PartialEq>(values: &mut Vec<T>, value: T) {
    if !values.contains(&value) {
        values.push(value);
    }
}

/// A capitalised month name or its abbreviation of three letters ("Sept" too).
fn month(word: &str) -> Option<u32> {
    if !word.starts_with(|c: char| c.is_ascii_uppercase()) || word.len() < 3 {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    let position = MONTHS.iter().position(|name| {
        let name = name.to_ascii_lowercase();
        lower == name || (lower.len() <= 4 && name.starts_with(&lower) && lower != "marc")
    })?;
    Some(position as u32 + 1)
}

fn year(word: &str) -> Option<i32> {
    (word.len() == 4)
        .then(|| word.parse::<i32>().ok())
        .flatten()
        .filter(|y| (1900..=2099).contains(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_and_years_are_found_in_words_and_iso_dates() {
        let dates = NamedDates::of("What did Caroline do in May 2023, and on 2024-03-12?");
        assert_eq!(dates.months, [5, 3]);
        assert_eq!(dates.years, [2023, 2024]);
        assert_eq!(NamedDates::of("Sept 1999, Dec").months, [9, 12]);
        // The verb, lower-case words and other numbers are not dates.
        let none = NamedDates::of("may I ask what march means for 12 of 12345 or 3000 items?");
        assert!(none.is_empty(), "{none:?}");
        assert!(NamedDates::of("May I see Alice's email?").is_empty());
        assert_eq!(NamedDates::of("May 2023 was busy").months, [5]);
    }

    #[test]
    fn an_observation_matches_by_its_text_or_when_it_was_written() {
        let written: Timestamp = "2026-03-14T10:00:00Z".parse().unwrap();
        let may_2023 = NamedDates::of("what happened in May 2023?");
        assert!(may_2023.match_observation("1:56 pm on 8 May, 2023: a fact", written));
        assert!(!may_2023.match_observation("8 May, 2024: a fact", written));
        assert!(!may_2023.match_observation("a fact without a date", written));
        let march = NamedDates::of("decisions in March");
        assert!(march.match_observation("a fact without a date", written));
        assert!(!NamedDates::of("no dates").match_observation("May 2023", written));
    }
}
