//! Memcached reply writers (text and meta), allocation-free on the hot path.

use bytes::{BufMut, BytesMut};

/// `<line>\r\n`
pub fn line(out: &mut BytesMut, s: &str) {
    out.put_slice(s.as_bytes());
    out.put_slice(b"\r\n");
}

fn put_u64(out: &mut BytesMut, v: u64) {
    out.put_slice(crate::resp::num::fmt_u64(v).as_bytes());
}

/// `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n` (get / gets).
pub fn value(out: &mut BytesMut, key: &[u8], flags: u32, data: &[u8], cas: Option<u64>) {
    out.reserve(key.len() + data.len() + 48);
    out.put_slice(b"VALUE ");
    out.put_slice(key);
    out.put_u8(b' ');
    put_u64(out, flags as u64);
    out.put_u8(b' ');
    put_u64(out, data.len() as u64);
    if let Some(c) = cas {
        out.put_u8(b' ');
        put_u64(out, c);
    }
    out.put_slice(b"\r\n");
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

/// `END\r\n`
pub fn end(out: &mut BytesMut) {
    out.put_slice(b"END\r\n");
}

/// A number on its own line (incr / decr).
pub fn number(out: &mut BytesMut, v: u64) {
    put_u64(out, v);
    out.put_slice(b"\r\n");
}

/// Meta reply flags: each as ` <letter><token>`.
pub struct MetaOut<'a> {
    pub out: &'a mut BytesMut,
}

impl MetaOut<'_> {
    /// Starts a meta reply: `VA <len>` (with a value) or a bare code
    /// (`HD`, `EN`, `NF`, `NS`, `EX`, `MN`).
    pub fn start<'a>(out: &'a mut BytesMut, code: &str, value_len: Option<usize>) -> MetaOut<'a> {
        out.put_slice(code.as_bytes());
        if let Some(n) = value_len {
            out.put_u8(b' ');
            put_u64(out, n as u64);
        }
        MetaOut { out }
    }

    /// ` <flag><number>`
    pub fn num(&mut self, flag: u8, v: i64) {
        self.out.put_u8(b' ');
        self.out.put_u8(flag);
        self.out.put_slice(crate::resp::num::fmt_i64(v).as_bytes());
    }

    /// ` <flag><token>`
    pub fn token(&mut self, flag: u8, t: &[u8]) {
        self.out.put_u8(b' ');
        self.out.put_u8(flag);
        self.out.put_slice(t);
    }

    /// Ends the line, then the value block if any.
    pub fn finish(self, value: Option<&[u8]>) {
        self.out.put_slice(b"\r\n");
        if let Some(v) = value {
            self.out.put_slice(v);
            self.out.put_slice(b"\r\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_match_memcached() {
        let mut o = BytesMut::new();
        value(&mut o, b"k", 5, b"abc", None);
        value(&mut o, b"k", 0, b"", Some(77));
        end(&mut o);
        number(&mut o, 42);
        assert_eq!(
            &o[..],
            b"VALUE k 5 3\r\nabc\r\nVALUE k 0 0 77\r\n\r\nEND\r\n42\r\n"
        );
        let mut o = BytesMut::new();
        let mut m = MetaOut::start(&mut o, "VA", Some(2));
        m.num(b'f', 3);
        m.num(b't', -1);
        m.token(b'k', b"key");
        m.finish(Some(b"hi"));
        assert_eq!(&o[..], b"VA 2 f3 t-1 kkey\r\nhi\r\n");
    }
}
