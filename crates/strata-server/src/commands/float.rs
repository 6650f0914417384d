//! INCRBYFLOAT and HINCRBYFLOAT arithmetic exactly as redis-server 7.0 on
//! x86-64 does it: both numbers parsed by `strtold` into x87 extended
//! precision (a 64-bit significand), added once with round-to-nearest-even,
//! and printed with `%.17Lf`, trailing zeros removed (Redis's
//! `LD_STR_HUMAN`). Emulated with big integers, so `0.1 + 0.2` is `0.3` as
//! in Redis, and `1e400` is a valid float as it is there.
//!
//! Not emulated: subnormal extended values (below ~3.4e-4932), refused
//! here as not a float where Redis would keep them.

use num_bigint::{BigInt, BigUint, Sign};

/// Exponents of normal x87 extended values: 2^-16382 .. 2^16383.
const MIN_EXP: i64 = -16382;
const MAX_EXP: i64 = 16383;

/// A finite extended value: `(-1)^neg × m × 2^e`, `m` < 2^64 (0 for zero).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ext {
    neg: bool,
    m: u64,
    e: i64,
}

/// A parsed long double: finite, or an infinity (NaN is never accepted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ld {
    Finite(Ext),
    Inf,
}

/// Rounds `n × 2^e` to a 64-bit significand (ties to even; `sticky`: a
/// non-zero part below `n` was already dropped). None on overflow or when
/// the result is below the normal range.
fn round(neg: bool, n: &BigUint, mut e: i64, sticky: bool) -> Option<Ext> {
    let bits = n.bits() as i64;
    if bits == 0 {
        return Some(Ext { neg, m: 0, e: 0 });
    }
    let m = if bits <= 64 {
        // Exact (a sticky remainder never comes with a short `n`: callers
        // keep at least 66 bits when they drop any).
        let v = u64::try_from(n).ok()?;
        let s = 64 - bits;
        e -= s;
        v << s
    } else {
        let shift = (bits - 64) as u64;
        let q = n >> shift;
        let rest = n - (&q << shift);
        let half = BigUint::from(1u8) << (shift - 1);
        let mut q = u64::try_from(&q).ok()?;
        e += shift as i64;
        let up = match rest.cmp(&half) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => sticky || q & 1 == 1,
        };
        if up {
            match q.checked_add(1) {
                Some(v) => q = v,
                None => {
                    q = 1 << 63;
                    e += 1;
                }
            }
        }
        q
    };
    // Normalized significand `m` (bit 63 set) is 1.xxx × 2^(e + 63).
    let exp = e + 63;
    if !(MIN_EXP..=MAX_EXP).contains(&exp) {
        return None;
    }
    Some(Ext { neg, m, e })
}

/// `strtold` of a whole text, as Redis's `string2ld` accepts it: no
/// leading space, the whole text consumed, no NaN, no overflow, no
/// underflow to zero. Decimal digits with an optional point and exponent,
/// a hexadecimal float (`0x1.8p3`), or `inf` / `infinity` (any case,
/// signed).
pub fn parse(b: &[u8]) -> Option<Ld> {
    let s = std::str::from_utf8(b).ok()?;
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(Ld::Inf);
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        return parse_hex(neg, hex).map(Ld::Finite);
    }
    let (digits, frac_len, exp) = split_number(body, 'e', 10)?;
    if digits.is_empty() {
        return Some(Ld::Finite(Ext { neg, m: 0, e: 0 }));
    }
    let digits = digits.as_str();
    let d: BigUint = digits.parse().ok()?;
    // value = d × 10^k
    let k = exp - frac_len as i64;
    // Magnitude check before any big power: 10^k with |k| past ~5000 is
    // out of range whatever the digits are.
    let mag = digits.len() as i64 + k;
    if mag > 4934 {
        return None;
    }
    if mag < -4951 {
        return None;
    }
    let ext = if k >= 0 {
        let n = d * BigUint::from(10u8).pow(k as u32);
        round(neg, &n, 0, false)?
    } else {
        let den = BigUint::from(10u8).pow((-k) as u32);
        // Enough quotient bits for a 64-bit significand, a rounding bit
        // and more (the remainder is the sticky part).
        let s = (66 + den.bits() as i64 - d.bits() as i64).max(0);
        let num = d << (s as u64);
        let q = &num / &den;
        let sticky = &q * &den != num;
        round(neg, &q, -s, sticky)?
    };
    Some(Ld::Finite(ext))
}

/// Splits `digits[.digits][<exp_char>[+-]decimal]` (exponent letter in
/// either case) into its significant digits without leading zeros, the
/// number of digits after the point, and the exponent (huge ones saturate:
/// the value then over- or underflows). None if it is not that shape.
fn split_number(s: &str, exp_char: char, radix: u32) -> Option<(String, usize, i64)> {
    let (mant, exp) = match s.find([exp_char, exp_char.to_ascii_uppercase()]) {
        Some(i) => {
            let x = &s[i + 1..];
            let digits = x.strip_prefix(['+', '-']).unwrap_or(x);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let v: i64 = digits.parse().unwrap_or(i64::MAX / 4).min(1 << 40);
            (&s[..i], if x.starts_with('-') { -v } else { v })
        }
        None => (s, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    let ok = |c: char| c.is_digit(radix);
    if int.is_empty() && frac.is_empty() || !int.chars().chain(frac.chars()).all(ok) {
        return None;
    }
    let digits = format!("{int}{frac}").trim_start_matches('0').to_string();
    Some((digits, frac.len(), exp))
}

/// A hexadecimal float after its `0x`: hex digits with an optional point,
/// then an optional binary exponent `p[+-]digits`.
fn parse_hex(neg: bool, s: &str) -> Option<Ext> {
    let (digits, frac_len, exp) = split_number(s, 'p', 16)?;
    if digits.is_empty() {
        return Some(Ext { neg, m: 0, e: 0 });
    }
    let n = BigUint::parse_bytes(digits.as_bytes(), 16)?;
    let e = exp.checked_sub(4 * frac_len as i64)?;
    if !(-40_000..=40_000).contains(&e) {
        return None;
    }
    round(neg, &n, e, false)
}

/// `a + b` in extended precision (None when the sum overflows).
pub fn add(a: &Ext, b: &Ext) -> Option<Ext> {
    let lo = a.e.min(b.e);
    let signed = |x: &Ext| {
        let v = BigInt::from(x.m) << ((x.e - lo) as u64);
        if x.neg {
            -v
        } else {
            v
        }
    };
    let sum = signed(a) + signed(b);
    let (sign, mag) = sum.into_parts();
    // An exact zero sum is +0 in round-to-nearest.
    round(sign == Sign::Minus, &mag, lo, false)
}

/// `printf("%.17Lf")` with trailing zeros (and a bare point) removed, and
/// `-0` printed as `0` (Redis's `ld2string` in `LD_STR_HUMAN` mode).
pub fn format(x: &Ext) -> String {
    let m = BigUint::from(x.m);
    let digits = if x.e >= 0 {
        (m << (x.e as u64)).to_string()
    } else {
        let p = (-x.e) as u64;
        let n = m * BigUint::from(10u8).pow(17);
        let q = &n >> p;
        let rest = &n - (&q << p);
        let half = BigUint::from(1u8) << (p - 1);
        let q = match rest.cmp(&half) {
            std::cmp::Ordering::Greater => q + 1u8,
            std::cmp::Ordering::Equal if q.bit(0) => q + 1u8,
            _ => q,
        };
        let s = format!("{q:0>18}");
        let (int, frac) = s.split_at(s.len() - 17);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            int.to_string()
        } else {
            format!("{int}.{frac}")
        }
    };
    if x.neg && digits != "0" {
        format!("-{digits}")
    } else {
        digits
    }
}

/// INCRBYFLOAT / HINCRBYFLOAT: `old + incr` as Redis prints it, or None
/// when the sum is not finite (either input an infinity, or overflow).
/// Both inputs must already be valid (`parse` accepted them).
pub fn sum_text(old: &[u8], incr: &[u8]) -> Option<String> {
    match (parse(old)?, parse(incr)?) {
        (Ld::Finite(a), Ld::Finite(b)) => add(&a, &b).map(|s| format(&s)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(a: &str, b: &str) -> Option<String> {
        sum_text(a.as_bytes(), b.as_bytes())
    }

    #[test]
    fn sums_print_as_redis_7_on_x86_64_prints_them() {
        // Replies of redis-server 7.0.15 (INCRBYFLOAT).
        assert_eq!(sum("0.1", "0.2").as_deref(), Some("0.3"));
        assert_eq!(sum("10.5", "0.1").as_deref(), Some("10.6"));
        assert_eq!(sum("5.0e3", "2.0e2").as_deref(), Some("5200"));
        assert_eq!(sum("0", "3.0e-5").as_deref(), Some("0.00003"));
        assert_eq!(sum("1", "-1").as_deref(), Some("0"));
        assert_eq!(sum("-0.5", "0.25").as_deref(), Some("-0.25"));
        // 1e20 + 1 needs 67 bits: it rounds back to 1e20.
        assert_eq!(sum("1e20", "1").as_deref(), Some("100000000000000000000"));
        assert_eq!(sum("0", "1.1").as_deref(), Some("1.1"));
        assert_eq!(sum("0.1", "0.7").as_deref(), Some("0.8"));
        assert_eq!(
            sum("1", "0.3333333333333333333").as_deref(),
            Some("1.33333333333333333")
        );
        assert_eq!(
            sum("123456789.123456789", "0.000000001").as_deref(),
            Some("123456789.12345678999554366")
        );
        assert!(sum("1e400", "0").unwrap().starts_with(
            "100000000000000000002818806839475865145864534336290520386259106935396855340086298620393639948483241605220940539273176162"
        ));
        assert_eq!(sum("0", "0x10").as_deref(), Some("16"));
        assert_eq!(sum("0x1.8p1", "0X.8P-1").as_deref(), Some("3.25"));
        assert_eq!(sum("3.0", "1e-17").as_deref(), Some("3.00000000000000001"));
        assert_eq!(sum("0", "1e-18").as_deref(), Some("0"));
        assert_eq!(sum("-1e-18", "0").as_deref(), Some("0"));
        assert_eq!(
            sum("18446744073709551615", "1").as_deref(),
            Some("18446744073709551616")
        );
        assert_eq!(sum("inf", "1"), None);
        assert_eq!(sum("1e4932", "1e4932"), None);
    }

    #[test]
    fn parse_accepts_what_strtold_does_and_redis_keeps() {
        assert!(parse(b"1e400").is_some());
        assert!(parse(b".5").is_some() && parse(b"5.").is_some() && parse(b"+1").is_some());
        for bad in [
            "", " 1", "1 ", "1e", "e1", ".", "nan", "1x", "--1", "1e5000", "1e-5000",
        ] {
            assert_eq!(parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(parse(b"-INF"), Some(Ld::Inf));
    }

    #[test]
    fn rounding_is_to_nearest_even_on_64_bits() {
        // 2^64 + 1 is a tie between 2^64 and 2^64 + 2: even wins (2^64).
        assert_eq!(
            sum("18446744073709551616", "1").as_deref(),
            Some("18446744073709551616")
        );
        // 2^64 + 3 rounds up to 2^64 + 4.
        assert_eq!(
            sum("18446744073709551616", "3").as_deref(),
            Some("18446744073709551620")
        );
    }
}
