//! String commands over several keys at one moment (BITOP, LCS, PFCOUNT
//! of several keys, PFMERGE): their values read and their result written
//! in one keyed section.

use crate::command::{Ctx, Outcome};
use bytes::{Bytes, BytesMut};
use strata_engine::{EngineError, ExpireUpdate, Mutation, Read};

/// A read inside a section: a cold one completes on this thread at the
/// first poll (`keyspace::exclusive`), so no executor is entered (this
/// may run under EXEC's or a script's).
fn in_section<T: Send + 'static>(read: Read<Result<T, EngineError>>) -> Result<T, EngineError> {
    use futures::FutureExt;
    read.wait()
        .now_or_never()
        .unwrap_or(Err(EngineError::Corrupt(
            "a read in a section did not complete",
        )))
}

/// The string values of `keys`, as of one moment, to `f`, which may
/// write `keys` and `writes` too (BITOP, LCS, PFCOUNT, PFMERGE): the keys
/// are warmed first, holding nothing, then `f` runs in a keyed section
/// over `keys` and `writes`. A key of another type is `Err(WrongType)`.
pub(crate) fn with_strings(
    ctx: &mut Ctx<'_>,
    keys: Vec<Bytes>,
    writes: Vec<Bytes>,
    f: impl FnOnce(
            &strata_engine::Engine,
            usize,
            Vec<Result<Option<Bytes>, EngineError>>,
            &mut BytesMut,
        ) + Send
        + 'static,
) -> Outcome {
    let (engine, db) = (ctx.engine().clone(), ctx.db());
    Outcome::Pending {
        reply: Box::pin(async move {
            crate::command::warm(&engine, db, keys.clone()).await;
            let engine = &engine;
            let mut held = keys.clone();
            held.extend(writes);
            let mut out = BytesMut::new();
            engine.exclusive_keys(&held, || {
                let values = keys.iter().map(|k| in_section(engine.get(db, k))).collect();
                f(engine, db, values, &mut out)
            });
            out
        }),
        // The values are read when the future runs, not now: later
        // commands of the pipeline must wait for it (a barrier).
        write: true,
    }
}

/// Stores `value` under `key` as a string Redis built in place (OBJECT
/// ENCODING `raw` whatever its length: BITOP's and PFMERGE's results),
/// replacing a value of any type; inside a section (`with_strings`).
pub(crate) fn set_raw(
    engine: &strata_engine::Engine,
    db: usize,
    key: &[u8],
    value: Vec<u8>,
    expire: ExpireUpdate,
) -> Result<(), EngineError> {
    let value = Bytes::from(value);
    let write = |v: Bytes| {
        in_section(engine.update(db, key, move |_| {
            let value = v.clone();
            (Mutation::SetRaw { value, expire }, ())
        }))
    };
    match write(value.clone()) {
        Err(EngineError::WrongType) => {
            // Overwrite the other type (no deletion first: Redis sends no
            // `del` for it), then mark the string raw.
            engine.set(db, key, &value, strata_engine::SetOptions::default())?;
            write(value)
        }
        r => r,
    }
}
