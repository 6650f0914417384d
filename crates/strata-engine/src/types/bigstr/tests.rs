use super::*;
use crate::types::parts::{Dir, PartInfo};
use std::collections::{BTreeMap, HashMap};

/// A tiny deterministic generator (the model test's seeds).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// "Flash": records by location.
#[derive(Default)]
struct Flash {
    records: HashMap<FlashLoc, Vec<u8>>,
    next: u32,
    seq: u64,
}

impl Flash {
    /// Writes every changed part and publishes it (the journal's work).
    fn write_changed(&mut self, s: &mut ChunkedStr) {
        self.seq += 1;
        for i in s.dirty_parts() {
            let mut body = Vec::new();
            s.encode_part(i, &mut body);
            self.next += 1;
            let loc = FlashLoc {
                segment: 1,
                offset: self.next,
                len: body.len() as u32,
            };
            self.records.insert(loc, body);
            let ver = s.part(i).ver;
            assert!(s.published(i, ver, loc, self.seq).is_some());
        }
        s.head.dirty = false;
    }

    /// Loads the cold parts of `[a, b)` and the last part (what the
    /// engine's `Need::Indexes` of a write loads).
    fn load(&self, s: &mut ChunkedStr, a: u64, b: u64) {
        let mut want: Vec<usize> = s.span_parts(a, b).collect();
        want.extend(s.parts.len().checked_sub(1));
        for i in want {
            let p = s.part(i);
            if !p.resident {
                let loc = p.loc.unwrap();
                assert!(s
                    .install(i, loc, &self.records[&loc], (i as u64, STR_DEPTH))
                    .unwrap());
            }
        }
    }
}

#[test]
fn a_chunked_string_reads_and_writes_as_a_flat_one() {
    let seeds: u64 = std::env::var("STR_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    for seed in 1..=seeds {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let init: Vec<u8> = (0..STR_CHUNKED_AT + 1 + rng.below(100_000) as usize)
            .map(|i| if i % 3 == 0 { 0 } else { i as u8 })
            .collect();
        let mut model = init.clone();
        let mut s = ChunkedStr::from_bytes(7, &init);
        let mut flash = Flash::default();
        for step in 0..400 {
            match rng.below(10) {
                0..=2 => {
                    // A write somewhere, sometimes far past the end.
                    let off = if rng.below(5) == 0 {
                        model.len() as u64 + rng.below(4 * STR_PART as u64)
                    } else {
                        rng.below(model.len() as u64)
                    };
                    let big = rng.below(4) == 0;
                    let n = 1 + rng.below(if big { 200_000 } else { 9 }) as usize;
                    let data: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                    flash.load(&mut s, off, off + n as u64);
                    s.write(off, &data).unwrap();
                    let end = off as usize + n;
                    if model.len() < end {
                        model.resize(end, 0);
                    }
                    model[off as usize..end].copy_from_slice(&data);
                }
                3 => {
                    let data = vec![rng.next() as u8; 1 + rng.below(70_000) as usize];
                    let end = s.len();
                    flash.load(&mut s, end, end);
                    s.append(&data).unwrap();
                    model.extend_from_slice(&data);
                }
                4..=6 => {
                    let a = rng.below(model.len() as u64 + 10);
                    let n = rng.below(150_000);
                    flash.load(&mut s, a, a + n);
                    let mut out = vec![0xAA; n as usize];
                    s.read(a, &mut out).unwrap();
                    let mut want = vec![0u8; n as usize];
                    let from = (a as usize).min(model.len());
                    let to = (a as usize + n as usize).min(model.len());
                    want[..to - from].copy_from_slice(&model[from..to]);
                    assert_eq!(out, want, "seed {seed} step {step}: read {a}+{n}");
                }
                7 => flash.write_changed(&mut s),
                _ => {
                    // Demote clean parts at random.
                    flash.write_changed(&mut s);
                    for i in 0..s.part_count() {
                        if rng.below(2) == 0 {
                            s.evict(i);
                        }
                    }
                }
            }
            // A part that reads wrongly loaded is caught by `check`.
            s.check()
                .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
            assert_eq!(s.len(), model.len() as u64);
        }
        let end = s.len();
        flash.load(&mut s, 0, end);
        assert_eq!(s.to_vec().unwrap(), model, "seed {seed}");
    }
}

#[test]
fn zero_parts_are_holes_and_a_far_write_makes_one_part() {
    let mut s = ChunkedStr::from_bytes(1, &vec![0u8; STR_CHUNKED_AT + 1]);
    // Every part but the last is a hole.
    assert_eq!(s.stored_len(), 1);
    // (Holes count as resident: nothing to load.)
    assert_eq!(s.resident_bytes(), 1);
    s.write(512 << 20, b"x").unwrap();
    assert_eq!(s.len(), (512 << 20) + 1);
    // The old last part grew to a whole part; the new last part holds the
    // byte and what precedes it in its part; the rest are holes.
    assert_eq!(s.stored_len(), STR_PART + 1);
    s.check().unwrap();
    let mut b = [9u8; 3];
    s.read(512 << 20, &mut b).unwrap();
    assert_eq!(b, [b'x', 0, 0]);
}

#[test]
fn a_write_to_a_cold_part_changes_nothing() {
    let init: Vec<u8> = (0..STR_CHUNKED_AT * 2 + 7).map(|i| i as u8 | 1).collect();
    let mut s = ChunkedStr::from_bytes(1, &init);
    let mut flash = Flash::default();
    flash.write_changed(&mut s);
    for i in 0..s.part_count() {
        s.evict(i);
    }
    let before = s.clone();
    assert_eq!(s.write(10, b"abc"), Err(NotLoaded));
    assert_eq!(s.append(b"abc"), Err(NotLoaded));
    assert_eq!(s, before);
    let mut out = [0u8; 4];
    assert_eq!(s.read(0, &mut out), Err(NotLoaded));
}

#[test]
fn recovery_keeps_what_the_records_hold() {
    let init: Vec<u8> = (0..STR_CHUNKED_AT + 5).map(|i| i as u8 | 1).collect();
    let mut s = ChunkedStr::from_bytes(3, &init);
    s.write(3 * STR_CHUNKED_AT as u64, b"end").unwrap();
    s.set_client_flags(42);
    let mut flash = Flash::default();
    flash.write_changed(&mut s);
    let infos: Vec<PartInfo> = (0..s.part_count())
        .map(|i| s.part(i))
        .filter(|p| p.loc.is_some())
        .collect();
    let mut meta = Vec::new();
    s.head_meta(&mut meta);
    let bodies: BTreeMap<u64, u32> = infos.iter().map(|p| (p.low, p.body)).collect();
    let span = s.head_span().unwrap();
    let mut r = ChunkedStr::from_infos(3, &infos, None, 0);
    r.set_meta(&meta, span, &bodies).unwrap();
    r.check().unwrap();
    assert_eq!((r.len(), r.client_flags), (s.len(), 42));
    let end = r.len();
    flash.load(&mut r, 0, end);
    assert_eq!(r.to_vec().unwrap(), s.to_vec().unwrap());
    // The last record lost: the string ends with the last part there is.
    let lost: Vec<PartInfo> = infos[..infos.len() - 1].to_vec();
    let mut r = ChunkedStr::from_infos(3, &lost, None, 0);
    assert!(r.set_meta(&meta, span, &bodies).is_err());
    r.check().unwrap();
    // The part where `init` ended grew to a whole part with the far write.
    assert_eq!(
        r.len(),
        (init.len() / STR_PART + 1) as u64 * STR_PART as u64
    );
}
