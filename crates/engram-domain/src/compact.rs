//! How results stay small on the wire without breaking the contract. Every key the tool
//! catalog (`shared/reference/tool-catalog.md`) or the primary specification names is in
//! every result, `null` or `[]` when empty: clients are written against those keys. What
//! engram adds beyond them (`already_existed: false`, `skipped_duplicates`, `signals`,
//! notices, the sources of generated texts) is left out when empty, since every result reaches
//! a model's context twice (MCP's structured content and its JSON text twin), and scores
//! carry 4 significant digits. The output schemas mark the catalog's keys required.

use serde::Serializer;

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

/// `skip_serializing_if` for counts written only when not zero.
pub fn is_zero(count: &i64) -> bool {
    *count == 0
}

/// `skip_serializing_if` for flags written only when set.
pub fn is_false(flag: &bool) -> bool {
    !*flag
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
}
