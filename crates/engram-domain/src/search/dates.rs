//! The dates a text names, as far as a search needs them: which months, years and days. A
//! question that names a month or a year ("what did we decide in March 2024?") prefers
//! observations dated then, and one that names a day ("on 8 May, 2023") those dated on or
//! near it, by a date written in them or by when they were written ([`crate::search`]).
//!
//! Months count only as capitalised English names or their three-letter abbreviations
//! ("May", "Sept"), so the verb "may" is not a month, nor "May" opening a question unless a
//! number follows; years are four-digit numbers from 1900 to 2099; ISO dates (`2024-03-12`,
//! `2024-03`) give both. A day is a month with a day of the month on either side and a year
//! after it ("8 May, 2023", "8th of May 2023", "May 8, 2023") or an ISO date.

use chrono::{Datelike, NaiveDate};

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

/// How many days from a day a question names an observation's day still counts as near it:
/// closeness falls linearly from 1 on the day to 0 this many days away ([`NamedDates::closeness`]).
pub const NEAR_DAYS: i64 = 7;

/// The months (1–12), years and days a text names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedDates {
    /// Months, 1–12.
    pub months: Vec<u32>,
    /// Years.
    pub years: Vec<i32>,
    /// Whole dates (day, month and year).
    pub days: Vec<NaiveDate>,
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
                if let Some(day) = parts.next().and_then(day_of_month)
                    && let Some(date) = NaiveDate::from_ymd_opt(y, m, day)
                {
                    push(&mut dates.days, date);
                }
            }
            if let Some(date) = day_around(&words, index) {
                push(&mut dates.days, date);
            }
        }
        dates
    }

    /// Whether nothing is named.
    pub fn is_empty(&self) -> bool {
        self.months.is_empty() && self.years.is_empty()
    }

    /// How near an observation whose text names `named` (its [`NamedDates::of`]), written at
    /// `created_at`, is dated to a day this (a question's dates) names: 1 on the day, falling
    /// linearly to 0 at [`NEAR_DAYS`] away, the nearest of the days the text names and the
    /// day it was written (UTC); 0 when this names no day.
    pub fn closeness(&self, named: &NamedDates, created_at: Timestamp) -> f64 {
        if self.days.is_empty() {
            return 0.0;
        }
        let mut dated = named.days.clone();
        dated.push(created_at.date_naive());
        let gap = (self.days.iter())
            .flat_map(|asked| dated.iter().map(move |d| (*asked - *d).num_days().abs()))
            .min()
            .unwrap_or(i64::MAX);
        (1.0 - gap as f64 / NEAR_DAYS as f64).max(0.0)
    }

    /// Whether an observation whose text names `named` (its [`NamedDates::of`]), written at
    /// `created_at`, is dated as this (a question's dates) asks: one of its months if it
    /// names any, and one of its years if it names any, both from the text or both from the
    /// time it was written.
    pub fn match_observation(&self, named: &NamedDates, created_at: Timestamp) -> bool {
        if self.is_empty() {
            return false;
        }
        let written = Self {
            months: vec![created_at.month()],
            years: vec![created_at.year()],
            days: Vec::new(),
        };
        [named, &written]
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

/// The date around the month at `words[index]`: a day of the month before it ("8 May",
/// "8th of May") or after it ("May 8"), and a year after both.
fn day_around(words: &[&str], index: usize) -> Option<NaiveDate> {
    let m = month(words[index])?;
    let at = |i: Option<usize>| i.and_then(|i| words.get(i).copied());
    let before = match at(index.checked_sub(1)) {
        Some("of") => at(index.checked_sub(2)),
        word => word,
    };
    let (day, y) = match before.and_then(day_of_month) {
        Some(day) => (day, at(Some(index + 1)).and_then(year)?),
        None => (
            at(Some(index + 1)).and_then(day_of_month)?,
            at(Some(index + 2)).and_then(year)?,
        ),
    };
    NaiveDate::from_ymd_opt(y, m, day)
}

/// A day of the month, 1–31, with or without its ordinal suffix ("8", "08", "8th", "21st").
fn day_of_month(word: &str) -> Option<u32> {
    let digits = ["st", "nd", "rd", "th"]
        .iter()
        .find_map(|suffix| word.strip_suffix(suffix))
        .unwrap_or(word);
    (digits.len() <= 2)
        .then(|| digits.parse::<u32>().ok())
        .flatten()
        .filter(|d| (1..=31).contains(d))
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
        assert!(
            may_2023.match_observation(&NamedDates::of("1:56 pm on 8 May, 2023: a fact"), written)
        );
        assert!(!may_2023.match_observation(&NamedDates::of("8 May, 2024: a fact"), written));
        assert!(!may_2023.match_observation(&NamedDates::of("a fact without a date"), written));
        let march = NamedDates::of("decisions in March");
        assert!(march.match_observation(&NamedDates::of("a fact without a date"), written));
        assert!(
            !NamedDates::of("no dates").match_observation(&NamedDates::of("May 2023"), written)
        );
    }

    #[test]
    fn days_are_found_in_every_common_order() {
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).unwrap();
        let of = |text| NamedDates::of(text).days;
        assert_eq!(
            of("What movie did Joanna watch on 1 May, 2022?"),
            [day(2022, 5, 1)]
        );
        assert_eq!(of("the 8th of December 2023"), [day(2023, 12, 8)]);
        assert_eq!(
            of("on December 8th, 2023 and 2024-03-12"),
            [day(2023, 12, 8), day(2024, 3, 12)]
        );
        assert_eq!(of("6:46 pm on 23 July, 2023: a fact"), [day(2023, 7, 23)]);
        // A month and a year, a day without a year, and impossible days are not days.
        assert!(of("in May 2023, on 8 May, on 31 February 2023, 2023-02-30").is_empty());
    }

    #[test]
    fn closeness_falls_from_the_named_day_over_a_week() {
        let written: Timestamp = "2026-03-14T10:00:00Z".parse().unwrap();
        let asked = NamedDates::of("what did Joanna watch on 1 May, 2022?");
        assert_eq!(
            asked.closeness(&NamedDates::of("2 May, 2022: watched a film"), written),
            1.0 - 1.0 / 7.0
        );
        assert_eq!(
            asked.closeness(&NamedDates::of("1 May, 2022: watched a film"), written),
            1.0
        );
        assert_eq!(
            asked.closeness(&NamedDates::of("20 May, 2022: watched a film"), written),
            0.0
        );
        assert_eq!(
            asked.closeness(&NamedDates::of("a film without a date"), written),
            0.0
        );
        let by_writing = NamedDates::of("on 2026-03-12");
        assert_eq!(
            by_writing.closeness(&NamedDates::of("no date here"), written),
            1.0 - 2.0 / 7.0
        );
        assert_eq!(
            NamedDates::of("in May 2022").closeness(&NamedDates::of("1 May, 2022"), written),
            0.0
        );
    }
}
