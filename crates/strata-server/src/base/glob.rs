//! Redis-compatible glob matching, used by `KEYS`, `SCAN MATCH`, `CONFIG GET`
//! and friends.
//!
//! This module owns one function, [`glob_match`], a faithful port of Redis's
//! `stringmatchlen` (`util.c`, Redis 7.x), including its quirks, so that a
//! pattern selects exactly the keys Redis would select:
//!
//! * `*` matches any run of bytes, `?` exactly one byte;
//! * `[abc]` one byte of a set, `[^abc]` one byte not in it, `[a-z]` a range
//!   (reversed ranges such as `[z-a]` are accepted), `\` escapes inside a set;
//! * `\x` matches `x` literally; a trailing lone `\` matches a `\`;
//! * an unterminated `[` set runs to the end of the pattern;
//! * matching is binary safe (no NUL termination); `nocase` folds ASCII only.
//!
//! Invariants and quirks kept on purpose:
//!
//! * As in Redis, a pattern that starts with `*` never matches the empty
//!   string (`glob_match(b"*", b"", _) == false`). Redis hides this by
//!   special-casing the pattern `*` in `KEYS`/`SCAN` ("all keys") before it
//!   ever calls the matcher; callers that list keys must do the same.
//! * Bounded work: recursion happens only on `*`, is capped at
//!   [`MAX_NESTING`] levels (deeper patterns simply do not match, like Redis),
//!   and the "skip longer matches" rule stops the search as soon as the tail
//!   of the pattern has failed at every position, so a pathological pattern
//!   such as `*a*a*a*...*b` runs in O(pattern × string) time, not exponential.

/// Deepest `*` nesting explored before giving up (Redis's limit too).
pub const MAX_NESTING: usize = 1000;

/// Returns whether `string` matches the glob `pattern` (Redis semantics; see
/// the module documentation). With `nocase`, ASCII letters compare
/// case-insensitively.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let mut skip_longer_matches = false;
    match_impl(pattern, string, nocase, &mut skip_longer_matches, 0)
}

/// Byte at `i`, or 0 past the end (the C code relies on NUL termination when
/// it peeks one byte ahead; reading a 0 reproduces that without overrunning).
#[inline]
fn at(s: &[u8], i: usize) -> u8 {
    s.get(i).copied().unwrap_or(0)
}

#[inline]
fn fold(c: u8, nocase: bool) -> u8 {
    if nocase {
        c.to_ascii_lowercase()
    } else {
        c
    }
}

fn match_impl(
    mut pattern: &[u8],
    mut string: &[u8],
    nocase: bool,
    skip_longer_matches: &mut bool,
    nesting: usize,
) -> bool {
    // Protection against abusive patterns.
    if nesting > MAX_NESTING {
        return false;
    }

    while !pattern.is_empty() && !string.is_empty() {
        match pattern[0] {
            b'*' => {
                // Collapse runs of stars.
                while pattern.len() > 1 && pattern[1] == b'*' {
                    pattern = &pattern[1..];
                }
                if pattern.len() == 1 {
                    return true;
                }
                while !string.is_empty() {
                    if match_impl(
                        &pattern[1..],
                        string,
                        nocase,
                        skip_longer_matches,
                        nesting + 1,
                    ) {
                        return true;
                    }
                    if *skip_longer_matches {
                        return false;
                    }
                    string = &string[1..];
                }
                // The rest of the pattern matched nowhere in the rest of the
                // string: no earlier `*` can help by matching more bytes.
                *skip_longer_matches = true;
                return false;
            }
            b'?' => {
                string = &string[1..];
            }
            b'[' => {
                // `p` indexes the pattern from just after the `[`.
                pattern = &pattern[1..];
                let mut p = 0usize;
                let not = at(pattern, 0) == b'^';
                if not {
                    p += 1;
                }
                let c = string[0];
                let mut matched = false;
                loop {
                    let remaining = pattern.len().saturating_sub(p);
                    if at(pattern, p) == b'\\' && remaining >= 2 {
                        // Escaped byte inside a set (compared exactly, as
                        // Redis does, even with nocase).
                        p += 1;
                        if pattern[p] == c {
                            matched = true;
                        }
                    } else if remaining > 0 && pattern[p] == b']' {
                        break;
                    } else if remaining == 0 {
                        // Unterminated set: stop at the end of the pattern.
                        // (C: `pattern--` so the shared `pattern++` below
                        // lands exactly on the end.)
                        p = p.saturating_sub(1);
                        break;
                    } else if remaining >= 3 && pattern[p + 1] == b'-' {
                        let (mut start, mut end) = (pattern[p], pattern[p + 2]);
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        let (start, end, ch) =
                            (fold(start, nocase), fold(end, nocase), fold(c, nocase));
                        p += 2;
                        if ch >= start && ch <= end {
                            matched = true;
                        }
                    } else if fold(pattern[p], nocase) == fold(c, nocase) {
                        matched = true;
                    }
                    p += 1;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                string = &string[1..];
                // Leave `pattern` on the closing `]` (or the last byte); the
                // common advance below steps past it.
                pattern = &pattern[p..];
                if pattern.is_empty() {
                    // Only reachable for a pattern that is exactly "[": the C
                    // code steps back before the `[` and forward again.
                    // Nothing left to consume.
                    return string.is_empty();
                }
            }
            b'\\' => {
                if pattern.len() >= 2 {
                    pattern = &pattern[1..];
                }
                if fold(pattern[0], nocase) != fold(string[0], nocase) {
                    return false;
                }
                string = &string[1..];
            }
            lit => {
                if fold(lit, nocase) != fold(string[0], nocase) {
                    return false;
                }
                string = &string[1..];
            }
        }
        pattern = &pattern[1..];
        if string.is_empty() {
            while !pattern.is_empty() && pattern[0] == b'*' {
                pattern = &pattern[1..];
            }
            break;
        }
    }
    pattern.is_empty() && string.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (pattern, string, nocase, expected)
    type Case = (&'static [u8], &'static [u8], bool, bool);

    #[test]
    fn table() {
        let cases: &[Case] = &[
            // Literal bytes must match exactly.
            (b"hello", b"hello", false, true),
            (b"hello", b"hellO", false, false),
            (b"hello", b"hell", false, false),
            (b"hell", b"hello", false, false),
            // Empty pattern matches only the empty string.
            (b"", b"", false, true),
            (b"", b"a", false, false),
            // nocase folds ASCII letters only.
            (b"HeLLo", b"hello", true, true),
            (b"h\xc9llo", b"h\xe9llo", true, false),
            // `?` matches exactly one byte.
            (b"h?llo", b"hello", false, true),
            (b"h?llo", b"hllo", false, false),
            (b"???", b"abc", false, true),
            (b"???", b"ab", false, false),
            // `*` matches any run, including an empty one inside the string.
            (b"h*llo", b"hllo", false, true),
            (b"h*llo", b"heeeello", false, true),
            (b"*", b"anything", false, true),
            (b"a*", b"a", false, true),
            (b"*a", b"a", false, true),
            (b"a*b*c", b"abc", false, true),
            (b"a*b*c", b"axxbyyc", false, true),
            (b"a*b*c", b"axxbyy", false, false),
            (b"*.conf", b"strata.conf", false, true),
            // Runs of stars collapse.
            (b"a**b", b"ab", false, true),
            (b"***", b"x", false, true),
            // Redis quirk: a pattern starting with `*` never matches "".
            (b"*", b"", false, false),
            (b"**", b"", false, false),
            // `[...]` matches one byte of a set.
            (b"h[ae]llo", b"hello", false, true),
            (b"h[ae]llo", b"hallo", false, true),
            (b"h[ae]llo", b"hillo", false, false),
            // `[^...]` negates the set.
            (b"h[^e]llo", b"hallo", false, true),
            (b"h[^e]llo", b"hello", false, false),
            // Ranges, including reversed ones.
            (b"h[a-b]llo", b"hbllo", false, true),
            (b"h[a-b]llo", b"hcllo", false, false),
            (b"[z-a]", b"m", false, true),
            (b"[^a-z]", b"M", false, true),
            // nocase applies to sets and ranges.
            (b"[A-C]x", b"bX", true, true),
            (b"[abc]", b"B", true, true),
            (b"[abc]", b"B", false, false),
            // `\` escapes inside a set (compared exactly even with nocase).
            (b"[\\]]", b"]", false, true),
            (b"[\\-]", b"-", false, true),
            (b"[\\a]", b"A", true, false),
            // Redis quirk: in `[a-]` the `-` makes a range up to `]` (the
            // set is then unterminated), so it matches `_` but not `-`.
            (b"[a-]", b"-", false, false),
            (b"[a-]", b"_", false, true),
            // An unterminated set runs to the end of the pattern.
            (b"[abc", b"b", false, true),
            (b"x[abc", b"xd", false, false),
            (b"[", b"[", false, false),
            (b"[", b"", false, false),
            // `\` escapes a special character outside sets.
            (b"\\*", b"*", false, true),
            (b"\\*", b"a", false, false),
            (b"a\\?c", b"a?c", false, true),
            (b"a\\?c", b"abc", false, false),
            (b"\\[x]", b"[x]", false, true),
            // A trailing lone `\` matches itself.
            (b"a\\", b"a\\", false, true),
            // Binary safe: NUL and high bytes are ordinary bytes.
            (b"a\0*", b"a\0bc", false, true),
            (b"?\xff", b"\0\xff", false, true),
            (b"a\0", b"a", false, false),
            // Trailing stars after the string is consumed still match.
            (b"abc***", b"abc", false, true),
            (b"abc*?", b"abc", false, false),
        ];
        for &(pattern, string, nocase, expected) in cases {
            assert_eq!(
                glob_match(pattern, string, nocase),
                expected,
                "pattern {:?} string {:?} nocase {}",
                String::from_utf8_lossy(pattern),
                String::from_utf8_lossy(string),
                nocase
            );
        }
    }

    #[test]
    fn pathological_pattern_is_fast() {
        // "*a*a*a...*a*b" against "aaaa...a": exponential with naive
        // backtracking, polynomial here.
        let mut pattern = Vec::new();
        for _ in 0..60 {
            pattern.extend_from_slice(b"*a");
        }
        pattern.extend_from_slice(b"*b");
        let string = vec![b'a'; 200];
        let start = std::time::Instant::now();
        assert!(!glob_match(&pattern, &string, false));
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn deep_nesting_is_bounded() {
        // More `*` than MAX_NESTING: must neither overflow the stack nor
        // hang; like Redis, it simply fails to match.
        let mut pattern = Vec::new();
        for _ in 0..(MAX_NESTING + 500) {
            pattern.extend_from_slice(b"*a");
        }
        let string = vec![b'a'; MAX_NESTING + 600];
        let start = std::time::Instant::now();
        assert!(!glob_match(&pattern, &string, false));
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        // Well below the limit the same shape matches.
        assert!(glob_match(b"*a*a*a*a", b"xaxaxaxa", false));
    }
}
