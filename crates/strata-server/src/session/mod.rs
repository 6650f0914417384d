//! What a client does beyond one command at a time, each in its room:
//! `transaction` (MULTI/EXEC and WATCH: queueing, and running the queue
//! in one exclusive section), `blocking` (clients blocked on lists and
//! sorted sets, served by the writes that fill them), `pubsub` (channels,
//! patterns, subscribers' queues and their output limit), `scripting`
//! (Lua scripts on the script thread). The command handlers of each are in
//! `commands/`; the connection (`connection/`) runs EXEC and EVAL and
//! writes pub/sub messages.

pub mod blocking;
pub mod monitor;
pub mod notify;
pub mod pubsub;
pub mod scripting;
pub mod tracking;
pub mod transaction;

/// Brings the cold values of `keys` into RAM before a section that will
/// need them (EXEC, EVAL), holding nothing meanwhile. A failed read is
/// not an error here: it shows in the command that needs the key.
pub async fn warm(shared: &crate::Shared, db: usize, keys: Vec<bytes::Bytes>) {
    if keys.is_empty() {
        return;
    }
    if let strata_engine::Read::Pending(f) = shared.engine.warm(db, keys) {
        let _ = f.await;
    }
}
