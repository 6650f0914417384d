//! `cjson.decode`, ported from the lua-cjson Redis bundles
//! (`deps/lua/src/lua_cjson.c`) so scripts get the same values and the
//! same errors: `Expected value but found T_END at character 1`, numbers
//! read as C's `strtod` reads them (so `1e999` is `inf`, `0x10` and
//! `Infinity` are numbers, as Redis decodes them), strings taken byte for
//! byte with lua-cjson's escapes, and at most `decode_max_depth` (1000)
//! nested levels. The text
//! ends at its first NUL byte, as a C string does.

use mlua::{LightUserData, Lua, Value};

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num,
    Bool,
    Null,
    Colon,
    Comma,
    End,
    /// A token error, with its message.
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num => "T_NUMBER",
            Tok::Bool => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(e) => e,
        }
    }
}

struct Token {
    t: Tok,
    /// Where it starts (0-based).
    index: usize,
    string: Vec<u8>,
    number: f64,
    boolean: bool,
}

struct Parser<'a> {
    data: &'a [u8],
    ptr: usize,
    depth: usize,
    /// `decode_max_depth`: nested arrays and objects a decode may open.
    max_depth: usize,
    /// `decode_invalid_numbers`: what strict JSON refuses but `strtod`
    /// reads (hex, `inf`, `nan`, a leading `+` ...) is a number.
    invalid_numbers: bool,
}

fn hex(c: u8) -> Option<u32> {
    (c as char).to_digit(16)
}

fn hex4(b: &[u8]) -> Option<u32> {
    let d = b.get(..4)?;
    d.iter().try_fold(0u32, |a, &c| Some((a << 4) | hex(c)?))
}

fn utf8(cp: u32, out: &mut Vec<u8>) {
    if cp <= 0x7F {
        out.push(cp as u8);
    } else if cp <= 0x7FF {
        out.extend_from_slice(&[(cp >> 6) as u8 | 0xC0, (cp & 0x3F) as u8 | 0x80]);
    } else if cp <= 0xFFFF {
        out.extend_from_slice(&[
            (cp >> 12) as u8 | 0xE0,
            ((cp >> 6) & 0x3F) as u8 | 0x80,
            (cp & 0x3F) as u8 | 0x80,
        ]);
    } else {
        out.extend_from_slice(&[
            (cp >> 18) as u8 | 0xF0,
            ((cp >> 12) & 0x3F) as u8 | 0x80,
            ((cp >> 6) & 0x3F) as u8 | 0x80,
            (cp & 0x3F) as u8 | 0x80,
        ]);
    }
}

/// The longest prefix of `b` C's `strtod` reads, and its value; None if
/// it reads nothing.
pub fn strtod(b: &[u8]) -> Option<(usize, f64)> {
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let sign = |v: f64| if neg { -v } else { v };
    let rest = &b[i..];
    let lower = |n: usize| rest.get(..n).map(|s| s.to_ascii_lowercase());
    if lower(3).as_deref() == Some(b"inf") {
        let n = if lower(8).as_deref() == Some(b"infinity") {
            8
        } else {
            3
        };
        return Some((i + n, sign(f64::INFINITY)));
    }
    if lower(3).as_deref() == Some(b"nan") {
        let mut n = 3;
        if rest.get(3) == Some(&b'(') {
            if let Some(close) = rest[4..]
                .iter()
                .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
            {
                if rest[4 + close] == b')' {
                    n = 4 + close + 1;
                }
            }
        }
        return Some((i + n, sign(f64::NAN)));
    }
    if lower(2).as_deref() == Some(b"0x") && rest.get(2).and_then(|&c| hex(c)).is_some()
        || lower(2).as_deref() == Some(b"0x")
            && rest.get(2) == Some(&b'.')
            && rest.get(3).and_then(|&c| hex(c)).is_some()
    {
        let mut j = 2;
        let (mut mant, mut exp, mut any) = (0f64, 0i64, false);
        while let Some(d) = rest.get(j).and_then(|&c| hex(c)) {
            mant = mant * 16.0 + d as f64;
            any = true;
            j += 1;
        }
        if rest.get(j) == Some(&b'.') {
            j += 1;
            while let Some(d) = rest.get(j).and_then(|&c| hex(c)) {
                mant = mant * 16.0 + d as f64;
                exp -= 4;
                any = true;
                j += 1;
            }
        }
        if !any {
            return Some((i + 1, sign(0.0)));
        }
        if matches!(rest.get(j), Some(b'p' | b'P')) {
            let mut k = j + 1;
            let eneg = match rest.get(k) {
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
            let start = k;
            let mut e: i64 = 0;
            while let Some(c) = rest.get(k).filter(|c| c.is_ascii_digit()) {
                e = (e * 10 + (c - b'0') as i64).min(1 << 20);
                k += 1;
            }
            if k > start {
                exp += if eneg { -e } else { e };
                j = k;
            }
        }
        let v = mant * 2f64.powi(exp.clamp(-2200, 2200) as i32);
        return Some((i + j, sign(v)));
    }
    // Decimal: digits [. digits] or . digits, then an exponent with digits.
    let mut j = 0;
    let int_digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
    j += int_digits;
    let mut frac_digits = 0;
    if rest.get(j) == Some(&b'.') {
        frac_digits = rest[j + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if int_digits > 0 || frac_digits > 0 {
            j += 1 + frac_digits;
        }
    }
    if int_digits == 0 && frac_digits == 0 {
        return None;
    }
    if matches!(rest.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(rest.get(k), Some(b'-' | b'+')) {
            k += 1;
        }
        let digits = rest[k.min(rest.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 {
            j = k + digits;
        }
    }
    let text = std::str::from_utf8(&rest[..j]).ok()?;
    let text = text.strip_suffix('.').unwrap_or(text);
    let v: f64 = text.parse().ok()?;
    Some((i + j, sign(v)))
}

impl Parser<'_> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn error(&self, tok: &mut Token, e: &'static str) {
        tok.t = Tok::Error(e);
        tok.index = self.ptr;
    }

    /// `json_is_invalid_number`: what strict JSON refuses but `strtod`
    /// may read.
    fn invalid_number(&self) -> bool {
        let mut p = self.ptr;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        let c = self.at(p);
        if c == b'0' {
            let c2 = self.at(p + 1);
            return c2 | 0x20 == b'x' || c2.is_ascii_digit();
        } else if c <= b'9' {
            return false;
        }
        let three = [self.at(p), self.at(p + 1), self.at(p + 2)].to_ascii_lowercase();
        &three == b"inf" || &three == b"nan"
    }

    fn number(&mut self, tok: &mut Token) {
        tok.t = Tok::Num;
        match strtod(&self.data[self.ptr..]) {
            Some((n, v)) => {
                tok.number = v;
                self.ptr += n;
            }
            None => self.error(tok, "invalid number"),
        }
    }

    fn string(&mut self, tok: &mut Token) {
        self.ptr += 1;
        tok.string.clear();
        loop {
            let ch = self.at(self.ptr);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return self.error(tok, "unexpected end of string");
            }
            let mut c = ch;
            if ch == b'\\' {
                c = match self.at(self.ptr + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        if self.unicode(tok).is_none() {
                            return self.error(tok, "invalid unicode escape code");
                        }
                        continue;
                    }
                    _ => return self.error(tok, "invalid escape code"),
                };
                self.ptr += 1;
            }
            tok.string.push(c);
            self.ptr += 1;
        }
        self.ptr += 1;
        tok.t = Tok::Str;
    }

    /// `json_append_unicode_escape`.
    fn unicode(&mut self, tok: &mut Token) -> Option<()> {
        let rest = &self.data[self.ptr.min(self.data.len())..];
        let mut cp = hex4(rest.get(2..)?)?;
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 || rest.get(6) != Some(&b'\\') || rest.get(7) != Some(&b'u') {
                return None;
            }
            let low = hex4(rest.get(8..)?)?;
            if low & 0xFC00 != 0xDC00 {
                return None;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        utf8(cp, &mut tok.string);
        self.ptr += len;
        Some(())
    }

    fn next(&mut self) -> Token {
        let mut tok = Token {
            t: Tok::End,
            index: 0,
            string: Vec::new(),
            number: 0.0,
            boolean: false,
        };
        while matches!(self.at(self.ptr), b' ' | b'\t' | b'\n' | b'\r') {
            self.ptr += 1;
        }
        tok.index = self.ptr;
        let ch = self.at(self.ptr);
        let single = match ch {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            0 => {
                tok.t = Tok::End;
                return tok;
            }
            _ => None,
        };
        if let Some(t) = single {
            tok.t = t;
            self.ptr += 1;
            return tok;
        }
        let rest = &self.data[self.ptr..];
        if ch == b'"' {
            self.string(&mut tok);
        } else if ch == b'-' || ch.is_ascii_digit() {
            if !self.invalid_numbers && self.invalid_number() {
                self.error(&mut tok, "invalid number");
            } else {
                self.number(&mut tok);
            }
        } else if !matches!(ch, b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+') {
            self.error(&mut tok, "invalid token");
        } else if rest.starts_with(b"true") {
            tok.t = Tok::Bool;
            tok.boolean = true;
            self.ptr += 4;
        } else if rest.starts_with(b"false") {
            tok.t = Tok::Bool;
            self.ptr += 5;
        } else if rest.starts_with(b"null") {
            tok.t = Tok::Null;
            self.ptr += 4;
        } else if self.invalid_numbers && self.invalid_number() {
            self.number(&mut tok);
        } else {
            self.error(&mut tok, "invalid token");
        }
        tok
    }

    fn throw(&self, expected: &str, tok: &Token) -> mlua::Error {
        mlua::Error::runtime(format!(
            "Expected {expected} but found {} at character {}",
            tok.t.name(),
            tok.index + 1
        ))
    }

    fn descend(&mut self) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(mlua::Error::runtime(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.ptr
            )));
        }
        Ok(())
    }

    fn value(&mut self, lua: &Lua, tok: Token) -> mlua::Result<Value> {
        Ok(match tok.t {
            Tok::Str => Value::String(lua.create_string(&tok.string)?),
            Tok::Num => Value::Number(tok.number),
            Tok::Bool => Value::Boolean(tok.boolean),
            Tok::Null => Value::LightUserData(LightUserData(std::ptr::null_mut())),
            Tok::ObjBegin => {
                self.descend()?;
                let t = lua.create_table()?;
                let mut tok = self.next();
                if tok.t != Tok::ObjEnd {
                    loop {
                        if tok.t != Tok::Str {
                            return Err(self.throw("object key string", &tok));
                        }
                        let key = lua.create_string(&tok.string)?;
                        let colon = self.next();
                        if colon.t != Tok::Colon {
                            return Err(self.throw("colon", &colon));
                        }
                        let v = self.next();
                        let v = self.value(lua, v)?;
                        t.raw_set(key, v)?;
                        let sep = self.next();
                        if sep.t == Tok::ObjEnd {
                            break;
                        }
                        if sep.t != Tok::Comma {
                            return Err(self.throw("comma or object end", &sep));
                        }
                        tok = self.next();
                    }
                }
                self.depth -= 1;
                Value::Table(t)
            }
            Tok::ArrBegin => {
                self.descend()?;
                let t = lua.create_table()?;
                let mut tok = self.next();
                if tok.t != Tok::ArrEnd {
                    let mut i = 1;
                    loop {
                        let v = self.value(lua, tok)?;
                        t.raw_set(i, v)?;
                        i += 1;
                        let sep = self.next();
                        if sep.t == Tok::ArrEnd {
                            break;
                        }
                        if sep.t != Tok::Comma {
                            return Err(self.throw("comma or array end", &sep));
                        }
                        tok = self.next();
                    }
                }
                self.depth -= 1;
                Value::Table(t)
            }
            _ => return Err(self.throw("value", &tok)),
        })
    }
}

/// Decodes `text` as lua-cjson does (module doc).
pub fn decode(lua: &Lua, text: &[u8], cfg: &super::json::Config) -> mlua::Result<Value> {
    if text.len() >= 2 && (text[0] == 0 || text[1] == 0) {
        return Err(mlua::Error::runtime(
            "JSON parser does not support UTF-16 or UTF-32",
        ));
    }
    let mut p = Parser {
        data: text,
        ptr: 0,
        depth: 0,
        max_depth: cfg.decode_max_depth,
        invalid_numbers: cfg.decode_invalid_numbers,
    };
    let tok = p.next();
    let v = p.value(lua, tok)?;
    let end = p.next();
    if end.t != Tok::End {
        return Err(p.throw("the end", &end));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::strtod;

    #[test]
    fn strtod_reads_what_c_reads() {
        assert_eq!(strtod(b"12abc"), Some((2, 12.0)));
        assert_eq!(strtod(b"1.5e"), Some((3, 1.5)));
        assert_eq!(strtod(b"1."), Some((2, 1.0)));
        assert_eq!(strtod(b"-0x10"), Some((5, -16.0)));
        assert_eq!(strtod(b"0x"), Some((1, 0.0)));
        assert_eq!(strtod(b"1e999").map(|x| x.1), Some(f64::INFINITY));
        assert_eq!(strtod(b"Infinity").map(|x| x.0), Some(8));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"."), None);
        assert!(strtod(b"nan(123)").is_some_and(|(n, v)| n == 8 && v.is_nan()));
    }
}
