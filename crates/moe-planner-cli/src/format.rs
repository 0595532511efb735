//! Units for human-readable output, one convention for every subcommand: times in the largest
//! unit that keeps the number at least 1 (`ns`, `us`, `ms`, `s`), bytes in decimal units (`B`,
//! `KB`, `MB`, `GB`, `TB`: powers of 1000, as network and collective bandwidths are quoted) and
//! money in US dollars with a `K`, `M` or `B` suffix (`$392.2M`). JSON output keeps raw SI
//! numbers; these helpers are for reports only.

/// Significant digits after the decimal point for times and bytes.
const DECIMALS: usize = 3;

/// Picks the largest `(unit, size)` whose size is at most `value`, or the smallest unit.
fn scaled(value: f64, units: &[(&'static str, f64)]) -> (f64, &'static str) {
    let magnitude = value.abs();
    let (name, size) = units
        .iter()
        .rev()
        .find(|(_, size)| magnitude >= *size)
        .or(units.first())
        .copied()
        .unwrap_or(("", 1.0));
    (value / size, name)
}

/// A duration in seconds with an adaptive unit: `15.406 ms`, `112.299 us`, `71.668 s`.
pub(crate) fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds == 0.0 {
        return format!("{seconds} s");
    }
    let (v, unit) = scaled(
        seconds,
        &[("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)],
    );
    format!("{v:.DECIMALS$} {unit}")
}

/// A byte count in decimal units: `512 B`, `2.949 MB`, `11.558 GB`.
pub(crate) fn bytes(count: f64) -> String {
    if !count.is_finite() {
        return format!("{count} B");
    }
    let (v, unit) = scaled(
        count,
        &[
            ("B", 1.0),
            ("KB", 1e3),
            ("MB", 1e6),
            ("GB", 1e9),
            ("TB", 1e12),
        ],
    );
    if unit == "B" {
        format!("{v:.0} B")
    } else {
        format!("{v:.DECIMALS$} {unit}")
    }
}

/// An amount of US dollars with one decimal and a magnitude suffix: `$392.2M`, `$374`.
pub(crate) fn usd(amount: f64) -> String {
    if !amount.is_finite() {
        return format!("${amount}");
    }
    let (v, suffix) = scaled(
        amount,
        &[("", 1.0), ("K", 1e3), ("M", 1e6), ("B", 1e9), ("T", 1e12)],
    );
    if suffix.is_empty() {
        format!("${v:.0}")
    } else {
        format!("${v:.1}{suffix}")
    }
}

/// A value's JSON spelling (`exclusive-homogeneous`, not `ExclusiveHomogeneous`), so reports
/// and `--json` name enums the same way.
pub(crate) fn json_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::from("?"),
    }
}

/// How many layers ended each way, in order of first appearance: `heuristic on 3, bound-reached
/// on 1` (the `search ended:` line of `place`).
pub(crate) fn endings<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    counts
        .iter()
        .map(|(name, n)| format!("{name} on {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_the_unit_that_keeps_the_number_at_least_one() {
        assert_eq!(duration(0.015_406_2), "15.406 ms");
        assert_eq!(duration(112.299e-6), "112.299 us");
        assert_eq!(duration(71.668_1), "71.668 s");
        assert_eq!(duration(3e-10), "0.300 ns");
        assert_eq!(duration(1e-3), "1.000 ms");
        assert_eq!(duration(0.0), "0 s");
        assert_eq!(duration(f64::INFINITY), "inf s");
    }

    #[test]
    fn bytes_use_decimal_units() {
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(2_949_120.0), "2.949 MB");
        assert_eq!(bytes(11.558e9), "11.558 GB");
        assert_eq!(bytes(1e3), "1.000 KB");
        assert_eq!(bytes(0.0), "0 B");
    }

    #[test]
    fn enums_print_as_their_json_names() {
        use moe_planner::comm_cost_model::piecewise::Regime;
        assert_eq!(json_name(&Regime::LatencyBound), "latency-bound");
        assert_eq!(json_name(&Regime::BandwidthBound), "bandwidth-bound");
        assert_eq!(json_name(&3_u8), "3");
    }

    #[test]
    fn money_has_one_decimal_and_a_suffix() {
        assert_eq!(usd(392_167_424.0), "$392.2M");
        assert_eq!(usd(196_083_712.0), "$196.1M");
        assert_eq!(usd(374.0), "$374");
        assert_eq!(usd(1.5e9), "$1.5B");
        assert_eq!(usd(12_345.0), "$12.3K");
    }
}
