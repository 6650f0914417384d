//! `--help`, the size and value parsers (Redis's `memtoll` rules) and the
//! redis.conf lexer (Redis's `sdssplitargs` rules for quotes and escapes).

use super::*;

/// The `--help` text: usage and a table of every option, with default and
/// description, generated from the option table. The caller prints the
/// version line.
pub fn help_text() -> String {
    let shown_default = |def: &OptionDef| {
        if def.default.is_empty() {
            "\"\"".to_string()
        } else {
            def.default.to_string()
        }
    };
    let name_width = OPTIONS.iter().map(|d| d.name.len()).max().unwrap_or(0) + 2;
    let default_width = OPTIONS
        .iter()
        .map(|d| shown_default(d).len())
        .max()
        .unwrap_or(0)
        .max("DEFAULT".len());
    let mut out = String::new();
    out.push_str("Usage: strata-server [/path/to/strata.conf] [--option value ...]\n");
    out.push_str("       strata-server -h | --help\n");
    out.push_str("       strata-server -v | --version\n\n");
    out.push_str(
        "The config file uses redis.conf syntax: one `option value...` per line,\n\
         '#' starts a comment line, values may be \"double\" or 'single' quoted.\n\
         Command-line options (--option value) override the file.\n\
         Sizes are bytes or use k (1000), kb (1024), m, mb, g, gb suffixes.\n\
         Options marked * can be changed at runtime with CONFIG SET.\n\n",
    );
    out.push_str(&format!(
        "  {:<nw$}   {:<dw$}  DESCRIPTION\n",
        "OPTION",
        "DEFAULT",
        nw = name_width,
        dw = default_width
    ));
    for def in OPTIONS.iter() {
        out.push_str(&format!(
            "  --{:<nw$} {} {:<dw$}  {}\n",
            def.name,
            if def.runtime { '*' } else { ' ' },
            shown_default(def),
            def.doc,
            nw = name_width - 2,
            dw = default_width
        ));
    }
    out
}

// ---------------------------------------------------------------------------
// Value parsers (each returns a reason naming the value on error)
// ---------------------------------------------------------------------------

/// Parses a size with Redis's `memtoll` rules: digits, optionally followed by
/// a case-insensitive unit `b` (1), `k` (1000), `kb` (1024), `m` (10^6),
/// `mb` (2^20), `g` (10^9) or `gb` (2^30). Rejects signs, fractions,
/// whitespace, unknown units, empty input and overflow of `u64`.
pub fn parse_size(s: &str) -> Option<u64> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

pub(super) fn parse_size_arg(v: &str, min: u64, max: u64) -> Result<u64, String> {
    let n = parse_size(v).ok_or_else(|| {
        format!("invalid size '{v}' (expected bytes, or a number with k/kb/m/mb/g/gb)")
    })?;
    if n < min || n > max {
        return Err(if max == u64::MAX {
            format!("size '{v}' is too small (minimum {min} bytes)")
        } else {
            format!("size '{v}' is out of range ({min} to {max} bytes)")
        });
    }
    Ok(n)
}

/// Strict unsigned integer: ASCII digits only (no sign, no spaces).
pub(super) fn parse_uint(v: &str, min: u64, max: u64, what: &str) -> Result<u64, String> {
    let n = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse::<u64>().ok()
    } else {
        None
    };
    match n {
        Some(n) if n >= min && n <= max => Ok(n),
        Some(_) => Err(format!("{what} '{v}' is out of range ({min} to {max})")),
        None if what == "port" => Err(format!("'{v}' is not a valid port")),
        None => Err(format!("'{v}' is not a valid {what} (expected an integer)")),
    }
}

/// An integer option as Redis's numeric configs check it, with Redis's
/// errors.
pub(super) fn parse_bounded(v: &str, min: i64, max: i64) -> Result<i64, String> {
    match parse_int(v) {
        Some(n) if n >= min && n <= max => Ok(n),
        Some(_) => Err(format!(
            "argument must be between {min} and {max} inclusive"
        )),
        None => Err("argument couldn't be parsed into an integer".into()),
    }
}

/// Strict signed integer: optional `-`, then ASCII digits.
pub(super) fn parse_int(v: &str) -> Option<i64> {
    let digits = v.strip_prefix('-').unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

pub(super) fn parse_bool(v: &str) -> Result<bool, String> {
    if v.eq_ignore_ascii_case("yes") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("no") {
        Ok(false)
    } else {
        Err(format!("'{v}' is not a boolean (expected yes or no)"))
    }
}

/// `save ""` or `save <seconds> <changes> [<seconds> <changes> ...]`,
/// normalised to single spaces.
pub(super) fn parse_save(args: &[String]) -> Result<String, String> {
    if let [only] = args {
        if only.is_empty() {
            return Ok(String::new());
        }
        // A single quoted argument such as "900 1 300 10".
        let parts: Vec<String> = only.split_ascii_whitespace().map(String::from).collect();
        if parts.len() > 1 {
            return parse_save(&parts);
        }
    }
    let raw = args.join(" ");
    if args.chunks(2).any(|pair| pair.len() != 2)
        || args
            .iter()
            .any(|a| parse_uint(a, 0, i32::MAX as u64, "").is_err())
    {
        return Err(format!(
            "invalid save parameters '{raw}' (expected \"\" or <seconds> <changes> pairs)"
        ));
    }
    Ok(raw)
}

/// `client-output-buffer-limit`: groups of class, hard, soft, seconds
/// (sizes may have units), changing those classes of `old`.
pub(super) fn parse_output_limits(
    args: &[String],
    old: [[u64; 3]; 3],
) -> Result<[[u64; 3]; 3], String> {
    let words: Vec<&str> = args
        .iter()
        .flat_map(|a| a.split_ascii_whitespace())
        .collect();
    let invalid = || format!("Invalid argument '{}'", args.join(" "));
    if words.is_empty() || !words.len().is_multiple_of(4) {
        return Err(invalid());
    }
    let mut new = old;
    for g in words.chunks(4) {
        let class = match g[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => return Err(invalid()),
        };
        let size = |w: &str| parse_size(w).ok_or_else(invalid);
        let secs = g[3].parse::<u64>().map_err(|_| invalid())?;
        new[class] = [size(g[1])?, size(g[2])?, secs];
    }
    Ok(new)
}

pub(super) fn bool_text(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

pub(super) fn path_text(p: &Path) -> String {
    p.display().to_string()
}

/// Number of CPUs, capped at [`MAX_THREADS`].
pub(super) fn cpu_count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(MAX_THREADS)
}

/// `pct`% of physical RAM, in bytes.
pub(super) fn percent_of_ram(pct: u64) -> u64 {
    let ram = physical_ram();
    // Divide first when large, so the product cannot overflow.
    if ram > u64::MAX / 100 {
        ram / 100 * pct
    } else {
        ram * pct / 100
    }
}

/// Physical RAM in bytes (`_SC_PHYS_PAGES * _SC_PAGESIZE`), read once.
pub(super) fn physical_ram() -> u64 {
    static RAM: OnceLock<u64> = OnceLock::new();
    *RAM.get_or_init(|| read_physical_ram().unwrap_or(FALLBACK_PHYSICAL_RAM))
}

#[cfg(unix)]
pub(super) fn read_physical_ram() -> Option<u64> {
    // SAFETY: sysconf has no preconditions; it only queries system values.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if pages <= 0 || page_size <= 0 {
        return None;
    }
    (pages as u64).checked_mul(page_size as u64)
}

#[cfg(not(unix))]
pub(super) fn read_physical_ram() -> Option<u64> {
    None
}

// ---------------------------------------------------------------------------
// redis.conf lexer
// ---------------------------------------------------------------------------

/// Splits a config file into directives. Lines are trimmed; empty lines and
/// lines whose first non-blank character is `#` are skipped (as in Redis, a
/// `#` later in a line is an ordinary argument character).
pub(super) fn parse_conf(text: &str) -> Result<Vec<Directive>, ConfigError> {
    let mut directives = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |reason: String| ConfigError::BadLine {
            line: i + 1,
            text: line.to_string(),
            reason,
        };
        let mut words = split_args(line).map_err(bad)?;
        if words.is_empty() {
            continue;
        }
        let name = words.remove(0).to_ascii_lowercase();
        directives.push(Directive {
            origin: Origin::Line(i + 1, line.to_string()),
            name,
            args: words,
        });
    }
    Ok(directives)
}

/// A `bind` address: an IP, `*` (any IPv4) or `::*` (any IPv6).
pub fn parse_addr(text: &str) -> Option<std::net::IpAddr> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    match text {
        "*" => Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        "::*" => Some(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
        t => t.parse().ok(),
    }
}

/// Redis's `sdssplitargs` (the protocol crate's port, which inline
/// requests use too), as text: whitespace-separated words, `"..."` with
/// backslash escapes, `'...'` with only `\'`; a closing quote must be
/// followed by whitespace or the end of the line.
pub fn split_args(line: &str) -> Result<Vec<String>, String> {
    let words = strata_protocol::split_args(line.as_bytes())
        .map_err(|_| "unbalanced quotes".to_string())?;
    words
        .into_iter()
        .map(|w| {
            String::from_utf8(w.to_vec()).map_err(|_| "argument is not valid UTF-8".to_string())
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------
