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
    write_double_text(out, v, &fmt_score(d));
}

/// Writes a double already printed as `s`: a bulk string in RESP2, a
/// double in RESP3.
pub fn write_double_text(out: &mut BytesMut, v: Version, s: &str) {
    match v {
        Version::Resp2 => write_bulk(out, s.as_bytes()),
        Version::Resp3 => {
            out.extend_from_slice(b",");
            out.extend_from_slice(s.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// Parses a score as Redis's `getDoubleFromObject`: C's `strtod` of the
/// whole text (so also `+1`, `.5`, `0x1p3`, `infinity`), no leading space,
/// no overflow or underflow to zero, no NaN.
pub fn parse_score(b: &[u8]) -> Option<f64> {
    if b.first().is_none_or(|c| is_c_space(*c)) {
        return None;
    }
    let r = strtod(b);
    (r.len == b.len() && !r.range_err && !r.v.is_nan()).then_some(r.v)
}

/// C's `isspace` in the C locale.
pub(super) fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// What C's `strtod` made of a text.
pub(super) struct Strtod {
    pub v: f64,
    /// Bytes consumed (0: no conversion, `v` is 0).
    pub len: usize,
    /// `ERANGE`: a finite number overflowed, or a non-zero one became 0.
    pub range_err: bool,
}

/// glibc's `strtod` in the C locale: leading spaces, a sign, then `inf` /
/// `infinity` / `nan[(chars)]`, a hex float (`0x1.8p3`) or a decimal one;
/// the longest prefix that forms a number is consumed.
pub(super) fn strtod(b: &[u8]) -> Strtod {
    let mut i = 0;
    while b.get(i).is_some_and(|c| is_c_space(*c)) {
        i += 1;
    }
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let rest = b.get(i..).unwrap_or_default();
    let signed = |v: f64| if neg { -v } else { v };
    let starts = |w: &[u8]| {
        rest.get(..w.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(w))
    };
    let done = |v: f64, n: usize, range_err: bool| Strtod {
        v: signed(v),
        len: i + n,
        range_err,
    };
    if starts(b"inf") {
        return done(
            f64::INFINITY,
            if starts(b"infinity") { 8 } else { 3 },
            false,
        );
    }
    if starts(b"nan") {
        let mut n = 3;
        if rest.get(3) == Some(&b'(') {
            let mut j = 4;
            while rest
                .get(j)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                j += 1;
            }
            if rest.get(j) == Some(&b')') {
                n = j + 1;
            }
        }
        return done(f64::NAN, n, false);
    }
    if starts(b"0x") {
        return match hex_float(rest.get(2..).unwrap_or_default()) {
            Some((v, n, nonzero)) => done(v, 2 + n, v.is_infinite() || (v == 0.0 && nonzero)),
            // "0x" with no hex digit: the "0" alone.
            None => done(0.0, 1, false),
        };
    }
    let digit = |j: usize| rest.get(j).is_some_and(u8::is_ascii_digit);
    let (mut j, mut digits, mut nonzero) = (0, 0, false);
    while digit(j) {
        nonzero |= rest.get(j) != Some(&b'0');
        j += 1;
        digits += 1;
    }
    if rest.get(j) == Some(&b'.') {
        j += 1;
        while digit(j) {
            nonzero |= rest.get(j) != Some(&b'0');
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return Strtod {
            v: 0.0,
            len: 0,
            range_err: false,
        };
    }
    if matches!(rest.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(rest.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        if digit(k) {
            while digit(k) {
                k += 1;
            }
            j = k;
        }
    }
    let v: f64 = rest
        .get(..j)
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse().ok())
        .unwrap_or(0.0);
    done(v, j, v.is_infinite() || (v == 0.0 && nonzero))
}

/// The hex float after `0x`: its absolute value, the bytes it took and
/// whether a digit was non-zero; None without a hex digit.
fn hex_float(r: &[u8]) -> Option<(f64, usize, bool)> {
    let (mut mant, mut exp, mut j, mut digits, mut point) = (0u64, 0i64, 0, 0, false);
    let mut nonzero = false;
    loop {
        match r.get(j) {
            Some(b'.') if !point => point = true,
            Some(c) if c.is_ascii_hexdigit() => {
                let d = (*c as char).to_digit(16).unwrap_or(0) as u64;
                nonzero |= d != 0;
                digits += 1;
                if mant >> 56 == 0 {
                    mant = mant * 16 + d;
                    if point {
                        exp -= 4;
                    }
                } else if !point {
                    exp += 4;
                }
            }
            _ => break,
        }
        j += 1;
    }
    if digits == 0 {
        return None;
    }
    if matches!(r.get(j), Some(b'p' | b'P')) {
        let mut k = j + 1;
        let neg = match r.get(k) {
            Some(b'-') => {
                k += 1;
                true
            }
            Some(b'+') => {
                k += 1;
                false
            }
            _ => false,
        };
        if r.get(k).is_some_and(u8::is_ascii_digit) {
            let mut e: i64 = 0;
            while let Some(c) = r.get(k).filter(|c| c.is_ascii_digit()) {
                e = (e * 10 + (c - b'0') as i64).min(1 << 20);
                k += 1;
            }
            exp += if neg { -e } else { e };
            j = k;
        }
    }
    let mut v = mant as f64;
    while exp > 1000 && v.is_finite() {
        v *= 2f64.powi(1000);
        exp -= 1000;
    }
    while exp < -1000 && v != 0.0 {
        v *= 2f64.powi(-1000);
        exp += 1000;
    }
    Some((v * 2f64.powi(exp.clamp(-1100, 1100) as i32), j, nonzero))
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
        for (t, v) in [
            (&b"0x10"[..], 16.0),
            (b"-0X1.8p1", -3.0),
            (b"0x.8", 0.5),
            (b"+.5e1", 5.0),
            (b"5.", 5.0),
            (b"Infinity", f64::INFINITY),
            (b"0e999", 0.0),
            (b"5e-324", 5e-324),
        ] {
            assert_eq!(parse_score(t), Some(v), "{:?}", String::from_utf8_lossy(t));
        }
        for bad in [
            &b""[..],
            b" 1",
            b"1 ",
            b"nan",
            b"1e400",
            b"1e-400",
            b"abc",
            b"(1",
            b"--inf",
            b"-+1",
            b"0x",
            b"0x1p",
            b"0x1p5000",
            b"0x1p-5000",
            b"1e",
            b"infinit",
            b"nan(1)",
        ] {
            assert_eq!(parse_score(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
