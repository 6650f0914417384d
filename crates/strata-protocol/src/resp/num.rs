//! Number parsing and formatting without allocation.
//!
//! - [`parse_i64`] mirrors Redis `string2ll` (no `+`, no leading zeros,
//!   no `-0`, at most 20 bytes).
//! - [`fmt_i64`] / [`fmt_u64`] are itoa-style stack formatters.
//! - [`fmt_double`] mirrors Redis `fpconv_dtoa` layout (shortest digits,
//!   `%g`-like switch to `e+NN` notation), and [`fmt_double_resp3`] mirrors
//!   Redis `d2string` (integral values within ±2^62 printed as integers).

use std::fmt::Write as _;

/// Parses a decimal integer exactly like Redis `string2ll`.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Small stack buffer used by the formatters.
pub(crate) struct StackBuf {
    buf: [u8; 48],
    len: usize,
}

impl StackBuf {
    pub(crate) const fn new() -> Self {
        StackBuf {
            buf: [0; 48],
            len: 0,
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn extend(&mut self, s: &[u8]) {
        for &b in s {
            self.push(b);
        }
    }
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.len + s.len() > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.extend(s.as_bytes());
        Ok(())
    }
}

/// Formats an unsigned integer (no allocation).
pub(crate) fn fmt_u64(mut n: u64) -> StackBuf {
    let mut tmp = [0u8; 20];
    let mut i = tmp.len();
    loop {
        i -= 1;
        if let Some(slot) = tmp.get_mut(i) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    let mut out = StackBuf::new();
    out.extend(tmp.get(i..).unwrap_or(&[]));
    out
}

/// Formats a signed integer (no allocation).
pub(crate) fn fmt_i64(n: i64) -> StackBuf {
    if n >= 0 {
        return fmt_u64(n as u64);
    }
    let digits = fmt_u64(n.unsigned_abs());
    let mut out = StackBuf::new();
    out.push(b'-');
    out.extend(digits.as_bytes());
    out
}

/// Formats a double the way Redis `fpconv_dtoa` does: `inf`, `-inf`, `nan`,
/// `0`/`-0`, otherwise shortest round-trip digits laid out as a plain
/// integer, plain decimal, or `d.ddde±X`.
pub(crate) fn fmt_double(d: f64) -> StackBuf {
    let mut out = StackBuf::new();
    if d.is_sign_negative() && !d.is_nan() {
        out.push(b'-');
    }
    if d.is_nan() {
        out.extend(b"nan");
        return out;
    }
    if d.is_infinite() {
        out.extend(b"inf");
        return out;
    }
    if d == 0.0 {
        out.push(b'0');
        return out;
    }
    // Shortest round-trip digits via core's formatter: "d.ddde<E>".
    let mut sci = StackBuf::new();
    if write!(sci, "{:e}", d.abs()).is_err() {
        out.extend(b"nan"); // unreachable: 48 bytes always suffice
        return out;
    }
    let s = sci.as_bytes();
    let epos = s.iter().position(|&b| b == b'e').unwrap_or(s.len());
    let mut digits = [0u8; 24];
    let mut nd = 0usize;
    for &b in s.get(..epos).unwrap_or(&[]) {
        if b.is_ascii_digit() && nd < digits.len() {
            if let Some(slot) = digits.get_mut(nd) {
                *slot = b;
            }
            nd += 1;
        }
    }
    let e = s
        .get(epos + 1..)
        .and_then(|x| std::str::from_utf8(x).ok())
        .and_then(|x| x.parse::<i32>().ok())
        .unwrap_or(0);
    let digits = digits.get(..nd).unwrap_or(&[]);
    emit_digits(&mut out, digits, e - (nd as i32 - 1));
    out
}

/// Lays out `digits × 10^k` like fpconv's `emit_digits`.
fn emit_digits(out: &mut StackBuf, digits: &[u8], k: i32) {
    let nd = digits.len() as i32;
    let mut exp = (k + nd - 1).abs();
    if k >= 0 && exp < nd + 7 {
        out.extend(digits);
        for _ in 0..k {
            out.push(b'0');
        }
        return;
    }
    if k < 0 && (k > -7 || exp < 4) {
        let offset = nd - k.abs();
        if offset <= 0 {
            out.extend(b"0.");
            for _ in 0..(-offset) {
                out.push(b'0');
            }
            out.extend(digits);
        } else {
            let (a, b) = digits.split_at(offset as usize);
            out.extend(a);
            out.push(b'.');
            out.extend(b);
        }
        return;
    }
    let (first, rest) = digits.split_first().unwrap_or((&b'0', &[]));
    out.push(*first);
    if !rest.is_empty() {
        out.push(b'.');
        out.extend(rest);
    }
    out.push(b'e');
    out.push(if k + nd - 1 < 0 { b'-' } else { b'+' });
    let mut cent = 0;
    if exp > 99 {
        cent = exp / 100;
        out.push(b'0' + cent as u8);
        exp -= cent * 100;
    }
    if exp > 9 {
        let dec = exp / 10;
        out.push(b'0' + dec as u8);
        exp -= dec * 10;
    } else if cent != 0 {
        out.push(b'0');
    }
    out.push(b'0' + (exp % 10) as u8);
}

/// Formats a double like Redis `d2string` (used for RESP3 `,` replies).
pub(crate) fn fmt_double_resp3(d: f64) -> StackBuf {
    const LIMIT: f64 = (i64::MAX / 2) as f64;
    if d != 0.0 && d.is_finite() && d.fract() == 0.0 && d > -LIMIT && d < LIMIT {
        return fmt_i64(d as i64);
    }
    fmt_double(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_i64_mirrors_string2ll() {
        let cases: &[(&[u8], Option<i64>)] = &[
            (b"0", Some(0)),
            (b"1", Some(1)),
            (b"-1", Some(-1)),
            (b"1234567890", Some(1234567890)),
            (b"9223372036854775807", Some(i64::MAX)),
            (b"-9223372036854775808", Some(i64::MIN)),
            (b"9223372036854775808", None), // overflow
            (b"-9223372036854775809", None),
            (b"", None),
            (b"-", None),
            (b"-0", None), // string2ll rejects
            (b"01", None), // leading zero
            (b"+1", None), // no plus sign
            (b" 1", None), // no spaces
            (b"1a", None), // trailing junk
            (b"99999999999999999999999", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_i64(s), *want, "{:?}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn integers_format() {
        for n in [0i64, 1, -1, 9, 10, 99, 100, i64::MAX, i64::MIN, -1234567] {
            assert_eq!(fmt_i64(n).as_bytes(), n.to_string().as_bytes());
        }
        assert_eq!(
            fmt_u64(u64::MAX).as_bytes(),
            u64::MAX.to_string().as_bytes()
        );
    }

    #[test]
    fn doubles_format_like_redis() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (1.5, "1.5"),
            (-1.5, "-1.5"),
            (0.1, "0.1"),
            (2.71, "2.71"),
            (100.0, "100"),
            (1e20, "1e+20"),
            (1.5e300, "1.5e+300"),
            (1e-7, "1e-7"),
            (1.25e-10, "1.25e-10"),
            (0.000123, "0.000123"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ];
        for (d, want) in cases {
            let got = fmt_double(*d);
            assert_eq!(std::str::from_utf8(got.as_bytes()).unwrap(), *want, "{d}");
        }
        // d2string prints integral values as integers
        assert_eq!(fmt_double_resp3(1e15).as_bytes(), b"1000000000000000");
        assert_eq!(fmt_double_resp3(1e20).as_bytes(), b"1e+20");
        assert_eq!(fmt_double_resp3(2.5).as_bytes(), b"2.5");
        assert_eq!(fmt_double_resp3(-0.0).as_bytes(), b"-0");
    }

    #[test]
    fn doubles_round_trip() {
        for d in [
            1.0 / 3.0,
            2.0f64.sqrt(),
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            -7.5e-5,
        ] {
            let s = fmt_double(d);
            let back: f64 = std::str::from_utf8(s.as_bytes()).unwrap().parse().unwrap();
            assert_eq!(back, d);
        }
    }
}
