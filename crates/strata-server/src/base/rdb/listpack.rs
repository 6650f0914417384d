//! Reading Redis's listpack and intset blobs (inside RDB payloads of small
//! hashes, sorted sets, quicklist nodes, integer sets and streams), and
//! writing listpacks (a stream's nodes, as DUMP writes them).

/// One listpack entry: a string or an integer.
#[derive(Debug, PartialEq)]
pub enum Entry<'a> {
    Str(&'a [u8]),
    Int(i64),
}

impl Entry<'_> {
    /// The entry as the bytes Redis would reply.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Entry::Str(s) => s.to_vec(),
            Entry::Int(i) => i.to_string().into_bytes(),
        }
    }
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64)
}

/// Sign-extends the low `bits` bits of `v`.
fn signed(v: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((v << shift) as i64) >> shift
}

/// The bytes of the back-length field for an entry of `len` bytes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// Parses a listpack; None if it is malformed.
pub fn entries(lp: &[u8]) -> Option<Vec<Entry<'_>>> {
    let total = le(lp.get(0..4)?) as usize;
    if total != lp.len() || total < 7 {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 6;
    loop {
        let b = *lp.get(i)?;
        if b == 0xFF {
            break;
        }
        let (entry, size) = if b & 0x80 == 0 {
            (Entry::Int((b & 0x7f) as i64), 1)
        } else if b & 0xC0 == 0x80 {
            let n = (b & 0x3f) as usize;
            (Entry::Str(lp.get(i + 1..i + 1 + n)?), 1 + n)
        } else if b & 0xE0 == 0xC0 {
            let v = (((b & 0x1f) as u64) << 8) | *lp.get(i + 1)? as u64;
            (Entry::Int(signed(v, 13)), 2)
        } else if b & 0xF0 == 0xE0 {
            let n = (((b & 0x0f) as usize) << 8) | *lp.get(i + 1)? as usize;
            (Entry::Str(lp.get(i + 2..i + 2 + n)?), 2 + n)
        } else {
            match b {
                0xF0 => {
                    let n = le(lp.get(i + 1..i + 5)?) as usize;
                    (Entry::Str(lp.get(i + 5..i + 5 + n)?), 5 + n)
                }
                0xF1 => (Entry::Int(signed(le(lp.get(i + 1..i + 3)?), 16)), 3),
                0xF2 => (Entry::Int(signed(le(lp.get(i + 1..i + 4)?), 24)), 4),
                0xF3 => (Entry::Int(signed(le(lp.get(i + 1..i + 5)?), 32)), 5),
                0xF4 => (Entry::Int(le(lp.get(i + 1..i + 9)?) as i64), 9),
                _ => return None,
            }
        };
        out.push(entry);
        i += size + backlen_size(size);
        if i >= lp.len() {
            return None;
        }
    }
    (i == lp.len() - 1).then_some(out)
}

/// Builds a listpack as listpack.c encodes it (`lpAppend`,
/// `lpAppendInteger`): a string that is a canonical i64 is stored as an
/// integer, every element ends with its back length.
#[derive(Default)]
pub struct Writer {
    buf: Vec<u8>,
    count: usize,
}

impl Writer {
    fn backlen(&mut self, l: usize) {
        let l = l as u64;
        if l <= 127 {
            self.buf.push(l as u8);
        } else if l < 16383 {
            self.buf
                .extend_from_slice(&[(l >> 7) as u8, ((l & 127) | 128) as u8]);
        } else if l < 2097151 {
            self.buf.extend_from_slice(&[
                (l >> 14) as u8,
                (((l >> 7) & 127) | 128) as u8,
                ((l & 127) | 128) as u8,
            ]);
        } else if l < 268435455 {
            self.buf.extend_from_slice(&[
                (l >> 21) as u8,
                (((l >> 14) & 127) | 128) as u8,
                (((l >> 7) & 127) | 128) as u8,
                ((l & 127) | 128) as u8,
            ]);
        } else {
            self.buf.extend_from_slice(&[
                (l >> 28) as u8,
                (((l >> 21) & 127) | 128) as u8,
                (((l >> 14) & 127) | 128) as u8,
                (((l >> 7) & 127) | 128) as u8,
                ((l & 127) | 128) as u8,
            ]);
        }
    }

    pub fn int(&mut self, v: i64) {
        let start = self.buf.len();
        let u = v as u64;
        match v {
            0..=127 => self.buf.push(v as u8),
            -4096..=4095 => {
                let x = (u & 0x1fff) as u16;
                self.buf
                    .extend_from_slice(&[0xC0 | (x >> 8) as u8, x as u8]);
            }
            -32768..=32767 => {
                self.buf.push(0xF1);
                self.buf.extend_from_slice(&(v as i16).to_le_bytes());
            }
            -8_388_608..=8_388_607 => {
                self.buf.push(0xF2);
                self.buf.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            }
            -2_147_483_648..=2_147_483_647 => {
                self.buf.push(0xF3);
                self.buf.extend_from_slice(&(v as i32).to_le_bytes());
            }
            _ => {
                self.buf.push(0xF4);
                self.buf.extend_from_slice(&v.to_le_bytes());
            }
        }
        let len = self.buf.len() - start;
        self.backlen(len);
        self.count += 1;
    }

    pub fn str(&mut self, s: &[u8]) {
        if strata_engine::types::is_int_member(s) {
            if let Some(v) = std::str::from_utf8(s)
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
            {
                return self.int(v);
            }
        }
        let start = self.buf.len();
        let n = s.len();
        if n < 64 {
            self.buf.push(0x80 | n as u8);
        } else if n < 4096 {
            self.buf
                .extend_from_slice(&[0xE0 | (n >> 8) as u8, n as u8]);
        } else {
            self.buf.push(0xF0);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        let len = self.buf.len() - start;
        self.backlen(len);
        self.count += 1;
    }

    /// The listpack: total bytes and element count (65535 when there are
    /// more), the elements, the end byte.
    pub fn finish(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.buf.len() + 7);
        out.extend_from_slice(&((self.buf.len() + 7) as u32).to_le_bytes());
        out.extend_from_slice(&(self.count.min(65535) as u16).to_le_bytes());
        out.extend_from_slice(&self.buf);
        out.push(0xFF);
        out
    }
}

/// Parses an intset blob (encoding, length, little-endian integers).
pub fn intset(b: &[u8]) -> Option<Vec<i64>> {
    let width = le(b.get(0..4)?) as usize;
    let n = le(b.get(4..8)?) as usize;
    if !matches!(width, 2 | 4 | 8) || b.len() != 8 + width * n {
        return None;
    }
    let bits = (width * 8) as u32;
    Some(b[8..].chunks(width).map(|c| signed(le(c), bits)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_entry_encoding() {
        // A listpack built by hand: 7-bit 5, 6-bit string "ab", 13-bit -1,
        // int16 1000, then EOF.
        let mut lp = vec![0u8; 6];
        lp.extend_from_slice(&[5, 1]);
        lp.extend_from_slice(&[0x82, b'a', b'b', 3]);
        lp.extend_from_slice(&[0xDF, 0xFF, 2]);
        lp.extend_from_slice(&[0xF1, 0xE8, 0x03, 3]);
        lp.push(0xFF);
        let total = lp.len() as u32;
        lp[0..4].copy_from_slice(&total.to_le_bytes());
        lp[4..6].copy_from_slice(&4u16.to_le_bytes());
        assert_eq!(
            entries(&lp).unwrap(),
            vec![
                Entry::Int(5),
                Entry::Str(b"ab"),
                Entry::Int(-1),
                Entry::Int(1000)
            ]
        );
        assert!(entries(&lp[..lp.len() - 1]).is_none());
        let mut is = vec![2, 0, 0, 0, 2, 0, 0, 0];
        is.extend_from_slice(&(-3i16).to_le_bytes());
        is.extend_from_slice(&7i16.to_le_bytes());
        assert_eq!(intset(&is), Some(vec![-3, 7]));
    }

    #[test]
    fn writes_what_it_reads() {
        let mut w = Writer::default();
        let ints = [
            0i64,
            127,
            128,
            -1,
            -4096,
            4095,
            40000,
            -40000,
            1 << 22,
            1 << 30,
            i64::MIN,
        ];
        for i in ints {
            w.int(i);
        }
        w.str(b"ab");
        w.str(&[b'x'; 100]);
        w.str(&[b'y'; 5000]);
        w.str(b"123");
        let lp = w.finish();
        let e = entries(&lp).unwrap();
        let mut want: Vec<Entry<'_>> = ints.iter().map(|&i| Entry::Int(i)).collect();
        want.push(Entry::Str(b"ab"));
        let (x, y) = ([b'x'; 100], [b'y'; 5000]);
        want.push(Entry::Str(&x));
        want.push(Entry::Str(&y));
        want.push(Entry::Int(123));
        assert_eq!(e, want);
    }
}
