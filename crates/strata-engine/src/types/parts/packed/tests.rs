//! The packed part: what is stored reads back, in either form, and a
//! plain part on flash has no box (invariants 1 and 2).

use super::*;
use rand::{rngs::StdRng, Rng, SeedableRng};

/// A hash part's name (`chunked::part::HashKey`).
struct Range;

impl KeyCodec for Range {
    fn pack(low: u64, depth: u8) -> Option<u64> {
        (low & 0xffff_ffff == 0 && depth < 64).then(|| low >> 32 | u64::from(depth) << 32)
    }
    fn unpack(bits: u64) -> (u64, u8) {
        ((bits & 0xffff_ffff) << 32, (bits >> 32) as u8)
    }
}

type Part<D> = Packed<D, Range>;

impl PartData for Vec<u8> {}
impl PartData for u8 {}

fn pick(r: &mut StdRng) -> Fields {
    // Mostly values that fit, sometimes one past each limit.
    let mut v = |fit: u64, wide: u64| -> u64 {
        if fit < wide && r.gen_ratio(1, 8) {
            r.gen_range(fit + 1..=wide)
        } else {
            r.gen_range(0..=fit)
        }
    };
    let depth = v(32, 48) as u8;
    let low = if depth > 32 {
        v(u64::from(u32::MAX), u64::MAX) & !(u64::MAX >> depth)
    } else {
        (v(u64::from(u32::MAX), u64::from(u32::MAX)) << 32) & !(u64::MAX >> depth)
    };
    let count = v(U16, u64::from(u32::MAX)) as u32;
    let body = v(U16, u64::from(u32::MAX)) as u32;
    let loc = (v(3, 3) > 0).then(|| FlashLoc {
        segment: v(mask(SEG_BITS), u64::from(u32::MAX)) as u32,
        offset: v(mask(OFF_BITS), u64::from(u32::MAX)) as u32,
        len: v(U16, u64::from(u32::MAX)) as u32,
    });
    let seq = v(mask(SEQ_BITS), u64::MAX);
    Fields {
        key: low,
        tag: depth,
        count,
        body,
        loc,
        seq,
    }
}

#[test]
fn fields_read_back_packed_or_wide() {
    let mut r = StdRng::seed_from_u64(46);
    let mut p: Part<Vec<u8>> = Part::new(Fields::default(), false, false, None);
    assert!(p.x.is_none());
    let (mut wide, mut packed) = (0, 0);
    for _ in 0..20_000 {
        let f = pick(&mut r);
        let (dirty, referenced, own) = (r.gen(), r.gen(), r.gen());
        match r.gen_range(0..4) {
            0 => {
                p = Part::new(f, dirty, own, None);
                p.set_referenced(referenced);
            }
            1 => {
                p.update(|g| *g = f);
                p.set_dirty(dirty);
                p.set_referenced(referenced);
                p.set_own(own);
            }
            2 => {
                p.set_size(f.count, f.body);
                p.set_loc(f.loc, f.seq);
                p.update(|g| {
                    g.key = f.key;
                    g.tag = f.tag;
                });
                p.set_dirty(dirty);
                p.set_referenced(referenced);
                p.set_own(own);
            }
            _ => {
                p.update(|g| *g = f);
                p.set_data(Some(vec![1]));
                p.set_ver(7);
                assert_eq!(p.ver(), 7);
                p.set_data(None);
                p.set_dirty(dirty);
                p.set_referenced(referenced);
                p.set_own(own);
            }
        }
        assert_eq!(p.fields(), f);
        assert_eq!(
            (p.name(), p.count(), p.body(), p.loc(), p.seq()),
            ((f.key, f.tag), f.count, f.body, f.loc, f.seq)
        );
        assert_eq!((p.dirty(), p.own()), (dirty, own));
        assert_eq!(p.referenced(), referenced);
        // Invariant 2: a box only for a wide or dirty part (no data here).
        let fits = f.pack::<Range>().is_some();
        assert_eq!(p.x.is_some(), !fits || dirty, "{f:?}");
        assert!(p.data().is_none());
        if p.x.is_none() {
            assert_eq!(p.ver(), 0);
        }
        if fits {
            packed += 1;
        } else {
            wide += 1;
        }
    }
    assert!(wide > 2000 && packed > 2000, "{wide} {packed}");
}

/// Data sets and drops the box; a wide part keeps its fields when its data
/// goes, and its box once it fits again.
#[test]
fn the_box_follows_data_and_width() {
    let f = Fields {
        key: 5 << 40,
        tag: 20,
        count: 3,
        body: 30,
        loc: Some(FlashLoc {
            segment: 9,
            offset: 4096,
            len: 200,
        }),
        seq: 1 << 40,
    };
    let mut p: Part<u8> = Part::new(f, false, true, Some(1));
    assert!(p.data().is_some() && p.x.is_some());
    p.set_data(None);
    assert!(p.x.is_none() && p.fields() == f);
    p.set_size(70_000, 3);
    assert!(p.x.is_some() && p.count() == 70_000);
    p.set_data(Some(2));
    p.set_data(None);
    assert_eq!(p.count(), 70_000);
    p.set_size(3, 30);
    assert!(p.x.is_none() && p.fields() == f && p.own());
    // A dirty part keeps its version (invariant 3) until it is clean.
    p.set_ver(9);
    p.set_dirty(true);
    assert_eq!(p.ver(), 9);
    p.set_dirty(false);
    assert!(p.x.is_none() && p.ver() == 0);
}
