//! Reading Redis's listpack and intset blobs (inside RDB payloads of small
//! hashes, sorted sets, quicklist nodes and integer sets).

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
        128..=16383 => 2,
        16384..=2097151 => 3,
        2097152..=268435455 => 4,
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
}
