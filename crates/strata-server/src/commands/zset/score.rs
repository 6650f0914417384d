//! Scores: parsed as Redis's `getDoubleFromObject`, printed as C's `%.17g`
//! (what redis-server 7.0 replies, in RESP2 bulk strings and RESP3 doubles).

use super::*;

/// A score as C's `%.17g` prints it (what Redis 7.0 replies).
pub fn fmt_score(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // 17 significant digits, correctly rounded: "d.dddddddddddddddde<exp>".
    let sci = format!("{d:.16e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..17).contains(&exp) {
        let d = digits.trim_end_matches('0');
        let (first, rest) = d.split_at(1.min(d.len()));
        let m = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{es}{:02}", exp.abs());
    }
    // Fixed notation with 17 significant digits, trailing zeros removed.
    let s = if exp >= 0 {
        let point = exp as usize + 1;
        let (int, frac) = digits.split_at(point);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            int.to_string()
        } else {
            format!("{int}.{frac}")
        }
    } else {
        let zeros = "0".repeat((-exp - 1) as usize);
        let frac = format!("{zeros}{digits}");
        format!("0.{}", frac.trim_end_matches('0'))
    };
    format!("{sign}{s}")
}

/// Writes a score: a bulk string in RESP2, a double in RESP3.
pub fn write_score(out: &mut BytesMut, v: Version, d: f64) {
    let s = fmt_score(d);
    match v {
        Version::Resp2 => write_bulk(out, s.as_bytes()),
        Version::Resp3 => {
            out.extend_from_slice(b",");
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Parses a score as Redis's `getDoubleFromObject` (strtod of the whole
/// text, no leading space, no overflow or underflow to zero, no NaN).
pub fn parse_score(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity") {
        return Some(if lower.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if body.starts_with("nan") || body.starts_with("inf") {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_infinite() {
        return None;
    }
    // Underflow to zero (a non-zero digit before the exponent) is an error.
    if v == 0.0 {
        let mant = body.split(['e', 'E']).next().unwrap_or("");
        if mant.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
            return None;
        }
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_print_as_percent_17g() {
        for (v, s) in [
            (1.1, "1.1000000000000001"),
            (3.0, "3"),
            (1e20, "1e+20"),
            (1e-7, "9.9999999999999995e-08"),
            (0.000001, "9.9999999999999995e-07"),
            (123456789.123, "123456789.123"),
            (0.0, "0"),
            (-2.25, "-2.25"),
            (f64::INFINITY, "inf"),
            (1e300, "1.0000000000000001e+300"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.0001, "0.0001"),
        ] {
            assert_eq!(fmt_score(v), s, "{v}");
        }
    }

    #[test]
    fn scores_parse_as_getdoublefromobject() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+INF"), Some(f64::INFINITY));
        assert_eq!(
            parse_score(b"-0").map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"nan",
            b"1e400",
            b"1e-400",
            b"abc",
            b"(1",
        ] {
            assert_eq!(parse_score(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
