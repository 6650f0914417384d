//! Command families (one file each, as Dragonfly's `*_family`), plus the
//! argument parsers they share. Handlers turn arguments into engine calls
//! and engine results into replies; they never block on I/O.

pub mod blocking;
pub mod float;
pub mod geo;
pub mod hash;
pub mod keys;
pub mod list;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod set;
pub mod sort;
pub mod stream;
pub mod strings;
pub mod table;
pub mod zset;

/// Parses a Redis integer argument (strict: no spaces, no '+', no
/// leading zeros other than "0", fits in i64).
pub fn parse_i64(b: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.len() > 20 || s.starts_with('+') {
        return None;
    }
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) || s == "-0" {
        return None;
    }
    s.parse().ok()
}

/// Parses a non-negative integer that fits in usize.
pub fn parse_usize(b: &[u8]) -> Option<usize> {
    parse_i64(b).and_then(|n| usize::try_from(n).ok())
}

/// Parses a Redis float argument (no NaN; "inf" allowed as Redis does).
pub fn parse_f64(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    let v: f64 = match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => s.parse().ok()?,
    };
    (!v.is_nan()).then_some(v)
}

/// The arguments of LMPOP / ZMPOP (and their blocking forms) from
/// `numkeys` on: `numkeys key... FIRST|SECOND [COUNT n]`, with Redis's
/// errors. Returns the keys, whether the side word was `second` (RIGHT,
/// MAX), and the count (default 1).
pub fn parse_mpop(
    args: &[bytes::Bytes],
    first: &str,
    second: &str,
) -> Result<(Vec<bytes::Bytes>, bool, usize), &'static str> {
    let numkeys = match args.first().and_then(|a| parse_i64(a)) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err("ERR numkeys should be greater than 0"),
    };
    let where_idx = numkeys.saturating_add(1);
    if where_idx >= args.len() as u64 {
        return Err(crate::reply::SYNTAX);
    }
    let w = where_idx as usize;
    let is_second = if is(&args[w], first) {
        false
    } else if is(&args[w], second) {
        true
    } else {
        return Err(crate::reply::SYNTAX);
    };
    let mut count = None;
    let mut j = w + 1;
    while j < args.len() {
        if count.is_none() && is(&args[j], "count") && j + 1 < args.len() {
            match parse_i64(&args[j + 1]) {
                Some(n) if n >= 1 => count = Some(n as usize),
                _ => return Err("ERR count should be greater than 0"),
            }
            j += 2;
        } else {
            return Err(crate::reply::SYNTAX);
        }
    }
    Ok((args[1..w].to_vec(), is_second, count.unwrap_or(1)))
}

/// HRANDFIELD / ZRANDMEMBER's `count [WITH...]` (`args` from the count
/// on), with Redis's errors: the count, and whether `with` was given.
pub fn parse_rand_count(args: &[bytes::Bytes], with: &str) -> Result<(i64, bool), &'static str> {
    let count = match args.first().and_then(|a| parse_i64(a)) {
        None => return Err(crate::reply::NOT_INTEGER),
        Some(i64::MIN) => {
            return Err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
        }
        Some(n) => n,
    };
    let with_values = match args.get(1) {
        None => false,
        Some(a) if args.len() == 2 && is(a, with) => true,
        Some(_) => return Err(crate::reply::SYNTAX),
    };
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count)
        || count < 0 && count.unsigned_abs() > hash::MAX_PICKS
    {
        return Err("ERR value is out of range");
    }
    Ok((count, with_values))
}

/// Case-insensitive comparison of an argument with an ASCII word.
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_redis_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"+1",
            b"01",
            b"-0",
            b" 1",
            b"1 ",
            b"1.0",
            b"9223372036854775808",
            b"abc",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(parse_f64(b" 1"), None);
    }
}
