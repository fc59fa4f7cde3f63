//! Durations as every Kubernetes component takes them: Go's form, a
//! sequence of numbers each with a unit (`90s`, `1m30s`, `1.5h`, `250ms`).
//! A bare number of seconds (`30`) is still taken, as earlier releases did.
//! Nothing here panics: every malformed value is an error naming it. Pure.

use std::time::Duration;

const NANOS_PER: [(&str, u128); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60 * 1_000_000_000),
    ("h", 3_600 * 1_000_000_000),
];

/// Parses a duration that must be greater than zero.
pub fn parse_positive(value: &str) -> Result<Duration, String> {
    match parse(value)? {
        Duration::ZERO => Err(format!("{value:?} must be greater than zero")),
        duration => Ok(duration),
    }
}

/// Parses `1h30m`, `90s`, `1.5s`, `500ms`, or a bare number of seconds.
pub fn parse(value: &str) -> Result<Duration, String> {
    let text = value.trim();
    let malformed = || format!("{value:?} is not a duration (for example 500ms, 90s, 1m30s or 2h)");
    if text.starts_with('-') {
        return Err(format!("{value:?} is negative"));
    }
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let seconds: u64 = text.parse().map_err(|_| malformed())?;
        return Ok(Duration::from_secs(seconds));
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    if rest.is_empty() {
        return Err(malformed());
    }
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        let (unit, unit_nanos) = NANOS_PER
            .iter()
            .filter(|(unit, _)| after.starts_with(unit))
            .max_by_key(|(unit, _)| unit.len())
            .ok_or_else(malformed)?;
        nanos = nanos
            .checked_add(scaled(number, *unit_nanos).ok_or_else(malformed)?)
            .ok_or_else(|| format!("{value:?} is too long a duration"))?;
        rest = &after[unit.len()..];
    }
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| format!("{value:?} is too long a duration"))
}

/// `number` (digits, optionally with a fraction) times `unit` nanoseconds.
fn scaled(number: &str, unit: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || !all_digits(fraction) || whole.len() > 20 {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut total = whole.checked_mul(unit)?;
    // Digits past the nanosecond add nothing.
    let mut place = unit;
    for digit in fraction.bytes().take(30) {
        place /= 10;
        total = total.checked_add(u128::from(digit - b'0') * place)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_are_taken() {
        let cases = [
            ("90s", Duration::from_secs(90)),
            ("1m30s", Duration::from_secs(90)),
            ("2h", Duration::from_secs(7200)),
            ("1.5h", Duration::from_secs(5400)),
            ("500ms", Duration::from_millis(500)),
            ("1h2m3s4ms5us6ns", Duration::new(3723, 4_005_006)),
            ("250µs", Duration::from_micros(250)),
            (".5s", Duration::from_millis(500)),
            ("+3s", Duration::from_secs(3)),
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("30", Duration::from_secs(30)),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn malformed_negative_and_overflowing_values_are_errors() {
        for text in [
            "",
            " ",
            "s",
            "1d",
            "1x",
            "1h-5m",
            "-5s",
            "1..5s",
            "1.5.5s",
            "ms",
            "1 s",
            "h1",
            "99999999999999999999999h",
            "600000000000h",
        ] {
            assert!(parse(text).is_err(), "{text:?} was taken");
        }
        assert!(parse_positive("0s").is_err());
        assert!(parse_positive("1ns").is_ok());
    }
}
