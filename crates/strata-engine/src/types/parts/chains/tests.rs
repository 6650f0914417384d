//! The chains' spilling and counts (unit tests).

use super::*;

fn loc(i: u32) -> FlashLoc {
    FlashLoc {
        segment: 1,
        offset: i * 512,
        len: 200,
    }
}

/// A cold chain of 300 bytes of steps, all logged in one record.
fn logged_cold() -> PartChain {
    let mut cold = PartChain::cold(loc(0), 10);
    cold.pending = vec![7u8; 300];
    cold.logged = 300;
    cold.changes = vec![loc(1)];
    cold.last_seq = 12;
    cold
}

/// Only a confirmed cold chain whose steps are all in records spills;
/// spilling frees its steps, keeps its records, and the counts stay
/// what the chains hold (invariants 3 and 5).
#[test]
fn only_logged_cold_chains_spill_and_the_counts_follow() {
    let mut c = PartChains::default();
    c.insert((1, 2), logged_cold());
    // Steps in two records: restated in one first (invariant 6).
    let mut two = PartChain::cold(loc(7), 40);
    two.pending = vec![7u8; 200];
    two.logged = 200;
    two.changes = vec![loc(8), loc(9)];
    two.last_seq = 42;
    c.insert((4, 2), two);
    // Steps not logged yet, and a part in RAM (a base): they stay.
    let mut unlogged = PartChain::cold(loc(3), 20);
    unlogged.pending = vec![1u8; 100];
    unlogged.changes = vec![loc(4)];
    c.insert((2, 2), unlogged);
    let mut hot = PartChain::read(loc(5), 30, bytes::Bytes::from_static(b"body"));
    hot.pending = vec![1u8; 100];
    hot.logged = 100;
    hot.changes = vec![loc(6)];
    c.insert((3, 2), hot);
    let restatable = c.get((4, 2)).unwrap().pending.capacity();
    assert_eq!(
        c.spillable(),
        c.get((1, 2)).unwrap().pending.capacity() + restatable
    );
    let before = c.steps_ram();
    // Without restatements: only the chain in one record spills.
    assert!(!c.spill(usize::MAX, false).1);
    let freed = before - c.steps_ram();
    assert!(freed >= 300, "{freed}");
    assert_eq!(c.spillable(), restatable);
    let ch = c.get((1, 2)).unwrap();
    assert!(ch.pending.is_empty() && ch.logged == 0);
    assert_eq!(ch.spilled_locs(), &[loc(1)]);
    assert_eq!(ch.spilled_seq, 12);
    // With them: the other is asked for a restatement, once.
    assert!(c.spill_due(1, true) && !c.spill_due(1, false));
    assert_eq!(c.spill(usize::MAX, true), (0, true));
    assert!(c.get((4, 2)).unwrap().want_image);
    assert!(!c.spill_due(1, true), "a restatement is in flight");
    assert_eq!(c.wanting_image(), vec![(4, 2)]);
    // Its restatement published: one record on the image, which spills.
    c.update((4, 2), |ch| {
        ch.want_image = false;
        ch.superseded = std::mem::take(&mut ch.changes);
        ch.confirmed = false;
    });
    c.update((4, 2), |ch| {
        ch.changes.push(loc(10));
        ch.superseded.clear();
        ch.confirmed = true;
        ch.last_seq = 50;
    });
    assert!(c.spill_due(1, false));
    c.spill(usize::MAX, false);
    assert_eq!(c.get((4, 2)).unwrap().spilled_locs(), &[loc(10)]);
    assert_eq!(c.spillable(), 0);
    assert_eq!(c.get((2, 2)).unwrap().pending.len(), 100);
    assert_eq!(c.get((3, 2)).unwrap().pending.len(), 100);
    // Shedding the bases makes the part in RAM's steps spillable.
    c.shed_bases();
    assert!(c.spillable() >= 100);
    c.spill(usize::MAX, false);
    assert_eq!(c.spillable(), 0);
    // A checkpoint wants no restatement of a chain all spilled.
    assert!(c.want_images());
    assert!(!c.get((1, 2)).unwrap().want_image);
    assert!(c.get((2, 2)).unwrap().want_image);
    c.check().unwrap();
}

/// A chain a checkpoint wants restated does not spill before the
/// restatement: the checkpoint named the records spilled before, and the
/// restatement starts where they end (invariant 5). (A spill meanwhile
/// left the record between them named nowhere: the kill -9 test lost
/// acknowledged changes after a BGSAVE.)
#[test]
fn a_chain_wanting_a_restatement_does_not_spill() {
    let mut c = PartChains::default();
    let mut ch = PartChain::cold(loc(0), 10);
    ch.pending = vec![7u8; 300];
    ch.logged = 300;
    ch.changes = vec![loc(1), loc(2)];
    ch.spilled = 1;
    ch.spilled_seq = 11;
    ch.last_seq = 12;
    c.insert((1, 2), ch);
    assert!(c.get((1, 2)).unwrap().may_spill());
    assert!(c.want_images());
    assert!(!c.get((1, 2)).unwrap().may_spill());
    assert_eq!(c.spill(usize::MAX, true), (0, false));
    assert_eq!(c.get((1, 2)).unwrap().spilled, 1);
}

/// A checkpoint's want of an image stops a chain from spilling, and the
/// counts follow (CI found `spillable` left counting such a chain: the
/// demoter's `steps_ram - spillable` went below zero).
#[test]
fn wanting_an_image_keeps_the_counts_of_what_may_spill() {
    let mut c = PartChains::default();
    c.insert((1, 2), logged_cold());
    assert!(c.spillable() >= 300);
    assert!(c.want_images());
    assert_eq!(c.spillable(), 0);
    c.check().unwrap();
    assert!(c.spillable() <= c.steps_ram());
    c.shed_bases();
    c.check().unwrap();
    c.update((1, 2), |ch| ch.want_image = false);
    assert!(c.spillable() >= 300);
    c.check().unwrap();
}
