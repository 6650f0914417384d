//! Redis's HyperLogLog string format (hyperloglog.c, Redis 7.0): a
//! 16-byte header ("HYLL", the encoding, 3 unused bytes, the cached
//! cardinality, little-endian, its top bit set when stale), then 16384
//! 6-bit registers, dense (packed) or sparse (ZERO / XZERO / VAL
//! run-length opcodes, promoted to dense past `hll-sparse-max-bytes` or a
//! register above 32); MurmurHash64A of the elements; Ertl's estimator.

pub(super) const P: u32 = 14;
pub(super) const Q: u32 = 64 - P;
pub(super) const REGISTERS: usize = 1 << P;
pub(super) const BITS: usize = 6;
pub(super) const REGISTER_MAX: u8 = 63;
pub(super) const HDR: usize = 16;
pub(super) const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);
pub(super) const DENSE: u8 = 0;
pub(super) const SPARSE: u8 = 1;
pub(super) const VAL_MAX_VALUE: u8 = 32;
pub(super) const VAL_MAX_LEN: usize = 4;
pub(super) const ZERO_MAX_LEN: usize = 64;
pub(super) const XZERO_MAX_LEN: usize = 16384;
pub(super) const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

pub(super) const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
pub(super) const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

/// MurmurHash64A, as Redis hashes HLL elements (seed 0xadc83b19).
pub(super) fn murmur64a(key: &[u8]) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h: u64 = 0xadc8_3b19 ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().unwrap_or_default());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        for (i, &b) in rest.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element goes to and its run of zeros plus one.
pub(super) fn pattern(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

pub(super) fn dense_get(r: &[u8], i: usize) -> u8 {
    let (byte, fb) = (i * BITS / 8, (i * BITS) & 7);
    let b0 = r[byte] as u16;
    let b1 = r.get(byte + 1).copied().unwrap_or(0) as u16;
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX as u16) as u8
}

pub(super) fn dense_set(r: &mut [u8], i: usize, v: u8) {
    let (byte, fb) = (i * BITS / 8, (i * BITS) & 7);
    let v = v as u16;
    r[byte] &= !((REGISTER_MAX as u16) << fb) as u8;
    r[byte] |= (v << fb) as u8;
    if let Some(b) = r.get_mut(byte + 1) {
        *b &= !((REGISTER_MAX as u16) >> (8 - fb)) as u8;
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// A sparse opcode at `p`: (is a VAL, its value, registers it covers,
/// bytes it takes).
pub(super) fn opcode(s: &[u8], p: usize) -> (bool, u8, usize, usize) {
    let b = s[p];
    if b & 0x80 != 0 {
        (true, ((b >> 2) & 0x1f) + 1, (b & 3) as usize + 1, 1)
    } else if b & 0x40 != 0 {
        let len = (((b & 0x3f) as usize) << 8 | *s.get(p + 1).unwrap_or(&0) as usize) + 1;
        (false, 0, len, 2)
    } else {
        (false, 0, (b & 0x3f) as usize + 1, 1)
    }
}

pub(super) fn val(v: u8, len: usize) -> u8 {
    ((v - 1) << 2 | (len as u8 - 1)) | 0x80
}

/// ZERO or XZERO for a run of `len` zero registers.
pub(super) fn zeros(len: usize, out: &mut Vec<u8>) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        out.push((l >> 8) as u8 | 0x40);
        out.push(l as u8);
    } else {
        out.push(len as u8 - 1);
    }
}

/// A new, empty HLL (sparse: XZERO opcodes over every register).
pub(super) fn empty() -> Vec<u8> {
    let mut v = b"HYLL".to_vec();
    v.resize(HDR, 0);
    v[4] = SPARSE;
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(XZERO_MAX_LEN);
        zeros(n, &mut v);
        left -= n;
    }
    v
}

/// Whether `v` is an HLL Redis accepts (`isHLLObjectOrReply`).
pub(super) fn valid(v: &[u8]) -> bool {
    v.len() >= HDR
        && &v[..4] == b"HYLL"
        && v[4] <= SPARSE
        && (v[4] != DENSE || v.len() == DENSE_SIZE)
}

pub(super) fn invalidate(v: &mut [u8]) {
    v[15] |= 0x80;
}

/// The registers of a sparse HLL, or None when it is corrupt: its
/// opcodes must cover exactly the registers (any opcode past the last
/// register is corruption, as since Redis's fix of CVE-2025-32023).
pub(super) fn sparse_registers(v: &[u8]) -> Option<Vec<u8>> {
    let mut regs = vec![0u8; REGISTERS];
    let (mut p, mut i) = (HDR, 0usize);
    while p < v.len() {
        let (is_val, value, len, size) = opcode(v, p);
        if i + len > REGISTERS {
            return None;
        }
        if is_val {
            regs[i..i + len].fill(value);
        }
        i += len;
        p += size;
    }
    (i == REGISTERS).then_some(regs)
}

/// The registers of a valid HLL (one byte each), None when corrupt.
pub(super) fn registers(v: &[u8]) -> Option<Vec<u8>> {
    if v[4] == DENSE {
        Some((0..REGISTERS).map(|i| dense_get(&v[HDR..], i)).collect())
    } else {
        sparse_registers(v)
    }
}

/// Sparse to dense (`hllSparseToDense`): the header (cache included) is
/// kept.
pub(super) fn to_dense(v: &mut Vec<u8>) -> bool {
    if v[4] == DENSE {
        return true;
    }
    let Some(regs) = sparse_registers(v) else {
        return false;
    };
    let mut d = v[..HDR].to_vec();
    d[4] = DENSE;
    d.resize(DENSE_SIZE, 0);
    for (i, &r) in regs.iter().enumerate() {
        if r != 0 {
            dense_set(&mut d[HDR..], i, r);
        }
    }
    *v = d;
    true
}

/// Whether adding `ele` would raise a register of the dense HLL `v`
/// (a read: PFADD copies the string only when one would change).
pub(super) fn dense_would_change(v: &[u8], ele: &[u8]) -> bool {
    let (index, count) = pattern(ele);
    count > dense_get(&v[HDR..], index)
}

pub(super) fn dense_update(v: &mut [u8], i: usize, count: u8) -> bool {
    let r = &mut v[HDR..];
    if count > dense_get(r, i) {
        dense_set(r, i, count);
        true
    } else {
        false
    }
}

/// `hllSparseSet`: raises register `index` to `count`; Some(changed), or
/// None when the HLL is corrupt. May promote to dense.
pub(super) fn sparse_set(
    v: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Option<bool> {
    if count > VAL_MAX_VALUE {
        return promote(v, index, count);
    }
    // Step 1: the opcode covering `index`.
    let (mut p, mut first, mut prev) = (HDR, 0usize, None);
    let mut op = None;
    while p < v.len() {
        let o = opcode(v, p);
        if p + o.3 > v.len() {
            return None; // an opcode cut short: corrupt
        }
        if index < first + o.2 {
            op = Some(o);
            break;
        }
        prev = Some(p);
        p += o.3;
        first += o.2;
    }
    let (is_val, value, span, size) = op?;
    if is_val {
        if value >= count {
            return Some(false);
        }
        if span == 1 {
            v[p] = val(count, 1);
            merge(v, prev);
            return Some(true);
        }
    }
    if !is_val && size == 1 && span == 1 {
        v[p] = val(count, 1);
        merge(v, prev);
        return Some(true);
    }
    // Step 2: split the opcode in up to three.
    let last = first + span - 1;
    let mut seq = Vec::with_capacity(5);
    if is_val {
        if index != first {
            seq.push(val(value, index - first));
        }
        seq.push(val(count, 1));
        if index != last {
            seq.push(val(value, last - index));
        }
    } else {
        if index != first {
            zeros(index - first, &mut seq);
        }
        seq.push(val(count, 1));
        if index != last {
            zeros(last - index, &mut seq);
        }
    }
    // Step 3: put it in place, unless the HLL grows past the limit.
    if seq.len() > size && v.len() + seq.len() - size > sparse_max {
        return promote(v, index, count);
    }
    v.splice(p..p + size, seq);
    merge(v, prev);
    Some(true)
}

/// Step 4 of `hllSparseSet`: merges adjacent VALs of one value, scanning
/// up to 5 opcodes from `prev`; then the cached count is stale.
pub(super) fn merge(v: &mut Vec<u8>, prev: Option<usize>) {
    invalidate(v);
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < v.len() && scan > 0 {
        scan -= 1;
        let b = v[p];
        if b & 0xc0 == 0x40 {
            p += 2;
            continue;
        }
        if b & 0x80 == 0 {
            p += 1;
            continue;
        }
        if p + 1 < v.len() && v[p + 1] & 0x80 != 0 {
            let (_, v1, l1, _) = opcode(v, p);
            let (_, v2, l2, _) = opcode(v, p + 1);
            if v1 == v2 && l1 + l2 <= VAL_MAX_LEN {
                v[p + 1] = val(v1, l1 + l2);
                v.remove(p);
                continue;
            }
        }
        p += 1;
    }
}

pub(super) fn promote(v: &mut Vec<u8>, index: usize, count: u8) -> Option<bool> {
    if !to_dense(v) {
        return None;
    }
    dense_update(v, index, count);
    Some(true)
}

/// `hllAdd` (a sparse HLL past `sparse_max` bytes becomes dense):
/// Some(changed), None when corrupt.
pub(super) fn add(v: &mut Vec<u8>, ele: &[u8], sparse_max: usize) -> Option<bool> {
    let (index, count) = pattern(ele);
    match v[4] {
        DENSE => Some(dense_update(v, index, count)),
        SPARSE => sparse_set(v, index, count, sparse_max),
        _ => None,
    }
}

pub(super) fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

pub(super) fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// `hllCount` over one register per byte.
pub(super) fn count(regs: &[u8]) -> u64 {
    let mut histo = [0u32; 64];
    for &r in regs {
        histo[(r & 63) as usize] += 1;
    }
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histo[Q as usize + 1] as f64) / m);
    for j in (1..=Q as usize).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    (ALPHA_INF * m * m / z).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_hll_is_redis_bytes() {
        let v = empty();
        assert_eq!(v.len(), 18);
        assert_eq!(&v[16..], &[0x7f, 0xff]);
        assert_eq!(count(&sparse_registers(&v).unwrap()), 0);
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut s = empty();
        let mut d = empty();
        assert!(to_dense(&mut d));
        for i in 0..2000 {
            let e = format!("e{i}");
            add(&mut s, e.as_bytes(), 3000).unwrap();
            add(&mut d, e.as_bytes(), 3000).unwrap();
        }
        assert_eq!(registers(&s), registers(&d));
        let n = count(&registers(&d).unwrap());
        assert!((1900..2100).contains(&n), "{n}");
    }
}
