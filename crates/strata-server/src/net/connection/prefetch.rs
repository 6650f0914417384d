//! A pipeline's keys, prefetched before it runs: the index lookups of the
//! next requests' keys are hinted together (`Engine::prefetch_keys`), so
//! their cache misses overlap. Used by both protocols, each with its own
//! peek at its input.

use crate::command::Shared;

/// Most keys of a pipeline prefetched at once.
pub(crate) const PREFETCH_MAX: usize = 32;

/// Prefetches the index lookups of the keys `peek` finds at the front of
/// a connection's input (its next requests) when there are several (a
/// pipeline): their cache misses then overlap, where each request's
/// lookup would wait for its own. Returns how many keys it found (a key
/// repeated in a row counted each time, hinted once).
pub(crate) fn prefetch_pipeline<'a>(
    shared: &Shared,
    db: usize,
    peek: impl FnOnce(&mut dyn FnMut(&'a [u8])),
) -> usize {
    let mut keys: [&[u8]; PREFETCH_MAX] = [&[]; PREFETCH_MAX];
    let (mut n, mut seen) = (0, 0);
    peek(&mut |k| {
        seen += 1;
        // A key repeated in a row (a pipeline on one counter, list or
        // queue) is hinted once: its lines are in cache for the rest.
        if n > 0 && keys[n - 1] == k {
            return;
        }
        if let Some(slot) = keys.get_mut(n) {
            *slot = k;
            n += 1;
        }
    });
    if n >= 2 {
        shared.engine.prefetch_keys(db, &keys[..n]);
    }
    seen
}
