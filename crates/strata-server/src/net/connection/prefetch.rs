//! A pipeline's keys, prefetched before it runs: the index lookups of the
//! next requests' keys are hinted together (`Engine::prefetch_keys`), so
//! their cache misses overlap. Used by both protocols, each with its own
//! peek at its input. And its cold parts, read ahead (`read_ahead`): a
//! request that waits for flash is a barrier to the ones after it, so
//! without it a pipeline's reads would go to the device one at a time.

use crate::command::Shared;
use bytes::Bytes;

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

/// Most requests of a pipeline whose parts are read ahead at once.
pub(crate) const READ_AHEAD: usize = 32;

/// Starts reading the parts on flash that the request `args` and the
/// next whole requests in `inbuf` (at most `READ_AHEAD` in all, fewer
/// under a small RAM budget: `Engine::read_ahead_depth`) will read
/// first, as their commands plan it (`commands::reads`), while the
/// connection waits for an earlier request: their reads then overlap
/// on the device. Each read only loads a part into RAM, as its request
/// would; the requests still run in order. Returns how many requests it
/// looked at.
pub(crate) fn read_ahead(shared: &Shared, db: usize, args: &[Bytes], inbuf: &[u8]) -> usize {
    let start = |req: &[&[u8]]| {
        let Some(spec) = req.first().and_then(|n| crate::registry::lookup(n)) else {
            return;
        };
        let Some(plan) = crate::commands::reads(spec) else {
            return;
        };
        if !spec.arity_ok(req.len()) {
            return;
        }
        if let Some(need) = plan(req) {
            let key = Bytes::copy_from_slice(req[1]);
            if let Some(read) = shared.engine.prefetch_parts(db, key, need) {
                tokio::spawn(read);
            }
        }
    };
    let now: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
    start(&now);
    let mut seen = 1;
    let depth = shared.engine.read_ahead_depth(READ_AHEAD);
    strata_protocol::peek_requests(inbuf, depth - 1, |req, cut| {
        seen += 1;
        // (A request of more arguments than peeked names more elements
        // than its plan would see: left to its turn.)
        if !cut {
            start(req);
        }
    });
    seen
}
