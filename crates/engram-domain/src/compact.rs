//! How results stay small on the wire without breaking the contract. Every key the tool
//! catalog (`shared/reference/tool-catalog.md`) or the primary specification names is in
//! every result, `null` or `[]` when empty: clients are written against those keys. What
//! engram adds beyond them (`already_existed: false`, `skipped_duplicates`, `signals`,
//! notices, the sources of generated texts) is left out when empty, since every result reaches
//! a model's context twice (MCP's structured content and its JSON text twin), and scores
//! carry 4 significant digits, and the instants a fact holds from are written as a day or to
//! the second ([`instant`]). The output schemas mark the catalog's keys required.

use chrono::{NaiveDate, NaiveTime, SecondsFormat};
use serde::{Deserialize, Deserializer, Serializer};

use crate::model::Timestamp;

/// Significant digits a score keeps: more than any threshold needs, fewer than noise.
pub const SCORE_DIGITS: i32 = 4;

/// `x` rounded to `digits` significant digits (0, NaN and infinities unchanged).
pub fn significant(x: f64, digits: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let magnitude = x.abs().log10().floor() as i32;
    let exponent = digits - 1 - magnitude;
    // Dividing by a power of ten (rather than multiplying by its inverse) keeps 0.5866 exact.
    if exponent >= 0 {
        let factor = 10f64.powi(exponent);
        (x * factor).round() / factor
    } else {
        let factor = 10f64.powi(-exponent);
        (x / factor).round() * factor
    }
}

/// Serialises a score with [`SCORE_DIGITS`] significant digits (`serialize_with`).
pub fn score<S: Serializer>(x: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(significant(*x, SCORE_DIGITS))
}

/// Serialises a score like [`score`], `null` when there is none (`serialize_with`).
pub fn optional_score<S: Serializer>(x: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(x) => score(x, serializer),
        None => serializer.serialize_none(),
    }
}

/// Serialises a share (0–1) with 4 decimals, rounded down: 1 only when complete.
pub fn share<S: Serializer>(x: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64((x * 10_000.0).floor() / 10_000.0)
}

/// Serialises an instant compactly (`serialize_with`): its UTC day, `"2026-03-02"`, when it is
/// exactly midnight UTC (a fact the client dated with a day), otherwise RFC 3339 in UTC to
/// whole seconds, `"2026-03-02T09:14:05Z"`.
pub fn instant<S: Serializer>(at: &Timestamp, serializer: S) -> Result<S::Ok, S::Error> {
    match at.time() == NaiveTime::MIN {
        true => serializer.collect_str(&at.date_naive()),
        false => serializer.serialize_str(&at.to_rfc3339_opts(SecondsFormat::Secs, true)),
    }
}

/// Serialises an instant like [`instant`], `null` when there is none (`serialize_with`).
pub fn optional_instant<S: Serializer>(
    at: &Option<Timestamp>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => instant(at, serializer),
        None => serializer.serialize_none(),
    }
}

/// Reads what [`instant`] writes (`deserialize_with`): a day, `"2026-03-02"`, as its midnight
/// UTC, or an RFC 3339 instant.
pub fn read_instant<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Timestamp, D::Error> {
    let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
    if let Ok(day) = NaiveDate::parse_from_str(&text, "%Y-%m-%d") {
        return Ok(day.and_time(NaiveTime::MIN).and_utc());
    }
    chrono::DateTime::parse_from_rfc3339(&text)
        .map(|at| at.with_timezone(&chrono::Utc))
        .map_err(|_| {
            serde::de::Error::custom(format!(
                "expected a day (2026-03-02) or an RFC 3339 instant, got {text:?}"
            ))
        })
}

/// `skip_serializing_if` for counts written only when not zero.
pub fn is_zero(count: &i64) -> bool {
    *count == 0
}

/// `skip_serializing_if` for flags written only when set.
pub fn is_false(flag: &bool) -> bool {
    !*flag
}

/// `text` cut at `max` characters, "…" marking a cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_keep_four_significant_digits() {
        assert_eq!(significant(0.1234567890123, 4), 0.1235);
        assert_eq!(significant(0.0023456789, 4), 0.002346);
        assert_eq!(significant(1.2999999, 4), 1.3);
        assert_eq!(significant(-0.123456, 4), -0.1235);
        assert_eq!(significant(12345.6, 4), 12350.0);
        assert_eq!(significant(0.0, 4), 0.0);
        assert!(significant(f64::NAN, 4).is_nan());
        assert_eq!(
            serde_json::to_string(&significant(0.58664, 4)).unwrap(),
            "0.5866"
        );
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Dated {
        #[serde(serialize_with = "instant", deserialize_with = "read_instant")]
        at: Timestamp,
    }

    fn written(at: &str) -> String {
        let at: Timestamp = at.parse().unwrap();
        serde_json::to_value(Dated { at }).unwrap()["at"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn an_instant_is_a_day_at_midnight_utc_and_whole_seconds_otherwise() {
        assert_eq!(written("2026-03-02T00:00:00Z"), "2026-03-02");
        assert_eq!(written("2026-03-02T09:14:05Z"), "2026-03-02T09:14:05Z");
        assert_eq!(
            written("2026-03-02T09:14:05.987654Z"),
            "2026-03-02T09:14:05Z"
        );
        // Midnight elsewhere is not midnight UTC; a moment past midnight is not a day.
        assert_eq!(written("2026-03-02T00:00:00+01:00"), "2026-03-01T23:00:00Z");
        assert_eq!(
            written("2026-03-02T00:00:00.000001Z"),
            "2026-03-02T00:00:00Z"
        );
        #[derive(serde::Serialize)]
        struct Maybe(#[serde(serialize_with = "optional_instant")] Option<Timestamp>);
        assert_eq!(serde_json::to_string(&Maybe(None)).unwrap(), "null");
        let day = Some("2026-03-02T00:00:00Z".parse().unwrap());
        assert_eq!(
            serde_json::to_string(&Maybe(day)).unwrap(),
            "\"2026-03-02\""
        );
    }

    #[test]
    fn what_is_written_reads_back() {
        for (text, at) in [
            ("2026-03-02", "2026-03-02T00:00:00Z"),
            ("2026-03-02T09:14:05Z", "2026-03-02T09:14:05Z"),
            ("2026-03-02T10:14:05+01:00", "2026-03-02T09:14:05Z"),
        ] {
            let read: Dated = serde_json::from_value(serde_json::json!({"at": text})).unwrap();
            assert_eq!(read.at, at.parse::<Timestamp>().unwrap(), "{text}");
        }
        let refused = serde_json::from_value::<Dated>(serde_json::json!({"at": "March"}));
        assert!(refused.is_err());
    }
}
