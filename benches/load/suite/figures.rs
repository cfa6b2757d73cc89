//! How the tables write a comparison: a ratio, and a target met or missed.

/// `a / b` as `1.23x`, or `n/a`.
pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() {
        format!("{:.2}x", a / b)
    } else {
        "n/a".to_owned()
    }
}

/// Whether a target was met, in the tables' words.
pub(crate) fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "**missed**" }
}
