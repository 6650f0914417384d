//! The value of a kind-7 record (docs/format.md): the databases' mapping
//! to the ids records carry, as SWAPDB left it (`keyspace::swapdb`).

/// Encodes a mapping as the value of a kind-7 record (u16 LE each).
pub fn encode(ids: &[u16]) -> Vec<u8> {
    ids.iter().flat_map(|i| i.to_le_bytes()).collect()
}

/// Decodes a kind-7 value for a run with `databases` databases: a
/// permutation of `0..n` for the run that wrote it (n ≤ databases; the
/// databases this run adds map to themselves), else None.
pub fn decode(value: &[u8], databases: usize) -> Option<Vec<u16>> {
    let n = value.len() / 2;
    if !value.len().is_multiple_of(2) || n > databases {
        return None;
    }
    let mut ids: Vec<u16> = value
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let mut seen = vec![false; n];
    for &i in &ids {
        if i as usize >= n || std::mem::replace(&mut seen[i as usize], true) {
            return None;
        }
    }
    ids.extend(n as u16..databases as u16);
    Some(ids)
}
