//! What a command handler is and gets: its context (`Ctx`: the server's
//! state `Shared`, the connection's `ConnState`, the output), its result
//! (`Outcome`) and the entry its family lists it by (`Command`: the
//! registry's facts and the handler). Command families (`commands/*`)
//! implement handlers against these types; `exec::dispatch` runs them.
//! This floor imports only the services, the registry and the base: it
//! knows no family and no connection.
//!
//! A handler writes its reply into `Ctx::out` and returns `Outcome::Done`,
//! or returns `Outcome::Pending` with a future that renders the reply once
//! flash reads complete. The connection keeps replies in request order and
//! treats a pending *write* as a barrier: later commands of the pipeline
//! run only after it completed, so they see its effect.

mod conn;
pub mod reads;
mod shared;

pub use conn::{ConnState, Multi};
pub use shared::{LogReloader, LoopControl, Refusal, ServerStats, Shared};

use crate::base::reply;
use crate::registry::{CommandSpec, Flags, Role};
use bytes::{Bytes, BytesMut};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use strata_engine::{Engine, EngineError, KeysView, Read};
use strata_protocol::Version;

/// What a handler produced.
pub enum Outcome {
    /// The reply is in `Ctx::out`.
    Done,
    /// The reply needs flash reads; `write` marks a mutation (a barrier).
    Pending {
        reply: Pin<Box<dyn Future<Output = BytesMut> + Send>>,
        write: bool,
    },
    /// Reply written; close the connection after sending it (QUIT).
    Close,
    /// EXEC of an open transaction: the connection runs it
    /// (`transaction::exec`).
    Exec,
    /// EVAL and friends: the connection runs the script
    /// (`scripting::eval`).
    Eval,
}

/// Where a command reports the lists and sorted sets it gave elements to,
/// whose blocked clients (BLPOP ...) may now be served: at once, or, inside
/// EXEC, after the transaction, as Redis serves them.
#[derive(Clone)]
pub struct ReadySink {
    shared: Arc<Shared>,
    deferred: Option<Deferred>,
}

/// The keys a running EXEC's commands filled, by database.
pub type Deferred = Arc<parking_lot::Mutex<Vec<(usize, Vec<Bytes>)>>>;

impl ReadySink {
    pub fn serve(&self, db: usize, keys: Vec<Bytes>) {
        if keys.is_empty() {
            return;
        }
        match &self.deferred {
            Some(d) => d.lock().push((db, keys)),
            None => self.shared.blocking.serve(&self.shared.engine, db, keys),
        }
    }
}

/// Everything a handler may touch: its connection and output, and the
/// services it uses through one method each (`engine`, `limits`,
/// `config`, `scripts`, `pubsub`, `blocking`, `tracking`, `listener` ...),
/// so what a family depends on reads from its calls. The whole server
/// state (`server`) is for the server family (INFO, CONFIG, CLIENT,
/// DEBUG ...), which administers all of it; `.ci/floors.py` keeps other
/// families from calling it.
pub struct Ctx<'a> {
    shared: &'a Arc<Shared>,
    pub conn: &'a mut ConnState,
    pub out: &'a mut BytesMut,
}

impl<'a> Ctx<'a> {
    pub fn new(shared: &'a Arc<Shared>, conn: &'a mut ConnState, out: &'a mut BytesMut) -> Self {
        Ctx { shared, conn, out }
    }
}

impl<'a> Ctx<'a> {
    pub fn engine(&self) -> &'a Engine {
        &self.shared.engine
    }
    /// The server state as a whole: the server family's (type doc).
    pub fn server(&self) -> &'a Arc<Shared> {
        self.shared
    }
    /// The protocol limits in force (`proto-max-bulk-len` ...).
    pub fn limits(&self) -> strata_protocol::Limits {
        self.shared.limits()
    }
    /// The configuration, read.
    pub fn config(&self) -> parking_lot::RwLockReadGuard<'a, crate::services::config::Config> {
        self.shared.config.read()
    }
    pub fn scripts(&self) -> &'a crate::services::scripts::Scripts {
        &self.shared.scripts
    }
    pub fn pubsub(&self) -> &'a Arc<crate::services::pubsub::PubSub> {
        &self.shared.pubsub
    }
    pub fn blocking(&self) -> &'a Arc<crate::services::blocking::Blocking> {
        &self.shared.blocking
    }
    pub fn tracking(&self) -> &'a Arc<crate::services::tracking::Tracking> {
        &self.shared.tracking
    }
    pub fn acl(&self) -> &'a crate::services::acl::Acl {
        &self.shared.acl
    }
    /// This connection's pub/sub listener (made on first use).
    pub fn listener(&mut self) -> &mut crate::services::pubsub::Listener {
        listener(&self.shared.pubsub, self.conn)
    }
    pub fn db(&self) -> usize {
        self.conn.db
    }
    pub fn version(&self) -> Version {
        self.conn.version
    }
    pub fn ready_sink(&self) -> ReadySink {
        ReadySink {
            shared: self.shared.clone(),
            deferred: self.conn.exec_ready.clone(),
        }
    }

    /// Renders the result of an engine read now if it is ready, or later.
    /// Engine errors become error replies.
    pub fn reply_with<T: Send + 'static>(
        &mut self,
        read: Read<Result<T, EngineError>>,
        write: bool,
        render: impl FnOnce(&mut BytesMut, Version, T) + Send + 'static,
    ) -> Outcome {
        let version = self.version();
        match read {
            Read::Ready(r) => {
                match r {
                    Ok(v) => render(self.out, version, v),
                    Err(e) => reply::engine(self.out, &e),
                }
                Outcome::Done
            }
            Read::Pending(fut) => Outcome::Pending {
                reply: Box::pin(async move {
                    let mut out = BytesMut::new();
                    match fut.await {
                        Ok(v) => render(&mut out, version, v),
                        Err(e) => reply::engine(&mut out, &e),
                    }
                    out
                }),
                write,
            },
        }
    }
}

impl Ctx<'_> {
    /// Runs `f` atomically on `keys` with their values in RAM (cold ones
    /// are fetched first: see `Engine::with_keys`); `f` writes the reply.
    /// A reply that waits for flash is a barrier even for a read, since
    /// `f` sees the keys as they are when it runs, which must be after the
    /// commands before it and before the ones after it.
    pub fn with_keys<F>(&mut self, keys: Vec<Bytes>, f: F) -> Outcome
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version) + Send + 'static,
    {
        self.with_keys_needs(keys, Vec::new(), f)
    }

    /// As `with_keys` for one key (no vectors unless it must be fetched
    /// first).
    pub fn with_key<F>(&mut self, key: Bytes, f: F) -> Outcome
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version) + Send + 'static,
    {
        match self.keys_now(std::slice::from_ref(&key), &[], f) {
            Ok(done) => done,
            Err((cold, f)) => self.keys_later(vec![key], Vec::new(), cold, f),
        }
    }

    /// As `with_keys`, where `needs[i]` names the elements the closure
    /// touches of `keys[i]` (`Engine::with_keys_needs`): of a chunked
    /// collection only the parts holding them are loaded.
    pub fn with_keys_needs<F>(
        &mut self,
        keys: Vec<Bytes>,
        needs: Vec<strata_engine::Need>,
        f: F,
    ) -> Outcome
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version) + Send + 'static,
    {
        match self.keys_now(&keys, &needs, f) {
            Ok(done) => done,
            Err((cold, f)) => self.keys_later(keys, needs, cold, f),
        }
    }

    /// The first attempt of `with_keys_needs`: with everything in RAM (the
    /// usual case) the closure runs now and writes its reply straight into
    /// the connection's output; else `f` comes back with what to fetch.
    fn keys_now<F>(
        &mut self,
        keys: &[Bytes],
        needs: &[strata_engine::Need],
        f: F,
    ) -> Result<Outcome, (strata_engine::ColdKeys, F)>
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version),
    {
        let version = self.version();
        let db = self.db();
        // While clients are blocked, writes report the lists and sorted
        // sets they filled, and serve those clients before replying.
        let track = self.shared.blocking.any_waiting();
        let mut f = Some(f);
        let first = {
            let out = &mut *self.out;
            let mut now = Some(|view: &mut KeysView<'_>| {
                if let Some(f) = f.take() {
                    f(view, out, version);
                }
            });
            self.shared
                .engine
                .try_keys_now(db, keys, needs, track, &mut now)
        };
        match (first, f) {
            (Err(cold), Some(f)) => Err((cold, f)),
            (Ok(((), ready)), _) => {
                if !ready.is_empty() {
                    self.ready_sink().serve(db, ready);
                }
                Ok(Outcome::Done)
            }
            // (Not reached: `f` is taken only when it runs.)
            (Err(_), None) => Ok(Outcome::Done),
        }
    }

    /// `with_keys_needs` after `keys_now` found `cold`: the reply is built
    /// apart and sent in order once the fetches are done.
    fn keys_later<F>(
        &mut self,
        keys: Vec<Bytes>,
        needs: Vec<strata_engine::Need>,
        cold: strata_engine::ColdKeys,
        f: F,
    ) -> Outcome
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version) + Send + 'static,
    {
        let version = self.version();
        let db = self.db();
        let track = self.shared.blocking.any_waiting();
        // The closure runs later, past the dispatcher's guards: a write's
        // lookups still count no keyspace hit or miss.
        let write = strata_engine::WriteLookups::active();
        let f = move |view: &mut KeysView<'_>| {
            let _write = write.then(strata_engine::WriteLookups::enter);
            let mut out = BytesMut::new();
            f(view, &mut out, version);
            out
        };
        let read = self
            .engine()
            .with_keys_after(db, keys, needs, track, cold, Some(f));
        let sink = self.ready_sink();
        self.reply_with(read, true, move |out, _, (reply, ready)| {
            out.extend_from_slice(&reply);
            sink.serve(db, ready);
        })
    }
}

impl Ctx<'_> {
    /// As `with_keys` for one hash or set of which the command touches
    /// only the elements `elems` names (fields, members; none for a count):
    /// of a chunked one only the parts holding them are read from flash.
    /// The closure must not look at any other element of the key.
    pub fn with_key_elems<F>(&mut self, key: Bytes, elems: Vec<Bytes>, f: F) -> Outcome
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version) + Send + 'static,
    {
        self.with_key_need(key, strata_engine::Need::Elems(elems), f)
    }

    /// As `with_key_elems`, for a closure that only reads the elements: a
    /// part on flash whose image alone holds them is read so
    /// (`Need::Reads`).
    pub fn with_key_reads<F>(&mut self, key: Bytes, elems: Vec<Bytes>, f: F) -> Outcome
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version) + Send + 'static,
    {
        self.with_key_need(key, strata_engine::Need::Reads(elems), f)
    }

    /// As `with_key_elems`, for elements the closure sets or adds (HSET,
    /// SADD), each with its value's length (0 for a set member): a part on
    /// flash that can take its one element without being read is not read
    /// (`Need::Adds`).
    pub fn with_key_adds<F>(&mut self, key: Bytes, elems: Vec<(Bytes, usize)>, f: F) -> Outcome
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version) + Send + 'static,
    {
        self.with_key_need(key, strata_engine::Need::Adds(elems), f)
    }

    /// As `with_key_elems`, for the parts of one key `need` names. (A ZADD
    /// through here serves the clients blocked on the key, as every write
    /// through `with_keys_needs` does.)
    pub fn with_key_need<F>(&mut self, key: Bytes, need: strata_engine::Need, f: F) -> Outcome
    where
        F: FnOnce(&mut KeysView<'_>, &mut BytesMut, Version) + Send + 'static,
    {
        // (No vectors unless the key must be fetched first.)
        match self.keys_now(std::slice::from_ref(&key), std::slice::from_ref(&need), f) {
            Ok(done) => done,
            Err((cold, f)) => self.keys_later(vec![key], vec![need], cold, f),
        }
    }
}

impl Ctx<'_> {
    /// A whole read of one collection, built a batch of parts at a time
    /// (`Engine::stream_coll`): `init` writes the reply's start, or all of
    /// it for a key that is not chunked (returning None), else returns the
    /// directory's parts to walk; `emit` writes the elements of each batch
    /// (with `rev`, the batches' outputs are joined last to first: a
    /// descending range). A chunked collection larger than RAM is read
    /// without being held in RAM at once.
    pub fn stream_key<I, E>(&mut self, key: Bytes, rev: bool, init: I, emit: E) -> Outcome
    where
        I: FnMut(&mut KeysView<'_>, &mut BytesMut, Version) -> Option<std::ops::Range<usize>>
            + Send
            + 'static,
        E: FnMut(&strata_engine::Collection, std::ops::Range<usize>, &mut BytesMut, Version)
            + Send
            + 'static,
    {
        let first = strata_engine::Need::Elems(Vec::new());
        self.stream_key_from(key, rev, first, init, emit)
    }

    /// As `stream_key`, where `init` reads the parts `first` names.
    pub fn stream_key_from<I, E>(
        &mut self,
        key: Bytes,
        rev: bool,
        first: strata_engine::Need,
        mut init: I,
        mut emit: E,
    ) -> Outcome
    where
        I: FnMut(&mut KeysView<'_>, &mut BytesMut, Version) -> Option<std::ops::Range<usize>>
            + Send
            + 'static,
        E: FnMut(&strata_engine::Collection, std::ops::Range<usize>, &mut BytesMut, Version)
            + Send
            + 'static,
    {
        let version = self.version();
        let db = self.db();
        let read = self.engine().stream_coll_from(
            db,
            key,
            first,
            move |view| {
                let mut out = BytesMut::new();
                let parts = init(view, &mut out, version);
                ((out, Vec::new()), parts)
            },
            move |c, parts, (head, batches): &mut (BytesMut, Vec<BytesMut>)| {
                if rev {
                    let mut out = BytesMut::new();
                    emit(c, parts, &mut out, version);
                    batches.push(out);
                } else {
                    emit(c, parts, head, version);
                }
                true
            },
        );
        // A barrier, as for other reads of collections: a later command of
        // the pipeline waits for this reply. The reply is moved, not copied,
        // when it is the only one (it can be as big as the collection).
        self.reply_with(read, true, move |out, _, (head, batches)| {
            if out.is_empty() {
                *out = head;
            } else {
                out.extend_from_slice(&head);
            }
            batches.iter().rev().for_each(|b| out.extend_from_slice(b));
        })
    }
}

pub type Handler = fn(&mut Ctx<'_>, &[Bytes]) -> Outcome;

/// What a command reads of its key (`args[1]`) first, planned from its
/// arguments (as a pipeline holds them, not yet run): the elements its
/// handler names to `with_key_adds`, `with_key_reads` ...; None when it
/// reads nothing a prefetch can name. Only a hint: the handler plans
/// again when it runs.
pub type ReadsFn = fn(&[&[u8]]) -> Option<strata_engine::Need>;

/// A command as its family lists it (`commands::*::COMMANDS`): the facts
/// the registry keeps, the handler that runs it (`commands::ALL` numbers
/// them; `commands::handler` finds the handler by the id) and, for a
/// command of a collection's elements, what it reads (`ReadsFn`).
#[derive(Clone, Copy)]
pub struct Command {
    pub spec: CommandSpec,
    pub handler: Handler,
    pub reads: Option<ReadsFn>,
}

/// An entry of a family's table, its flags by Redis's names (a name that
/// is not a flag does not build).
pub const fn cmd(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    group: &'static str,
    summary: &'static str,
    handler: Handler,
) -> Command {
    Command {
        spec: CommandSpec {
            id: 0,
            name,
            arity,
            flags: Flags::parse(flags),
            keys,
            group,
            summary,
            role: Role::Plain,
        },
        handler,
        reads: None,
    }
}

impl Command {
    /// The entry with the flags of `f` too (Strata's own: `READS_SOURCES`).
    pub const fn with(mut self, f: Flags) -> Command {
        self.spec.flags = self.spec.flags.with(f);
        self
    }

    /// The entry with what it reads of its key (`ReadsFn`).
    pub const fn reads(mut self, f: ReadsFn) -> Command {
        self.reads = Some(f);
        self
    }

    /// The entry with the role the machinery treats it as.
    pub const fn role(mut self, role: Role) -> Command {
        self.spec.role = role;
        self
    }
}

/// Brings the cold values of `keys` into RAM before a section that will
/// need them (EXEC, EVAL), holding nothing meanwhile. A failed read is
/// not an error here: it shows in the command that needs the key.
pub async fn warm(engine: &Engine, db: usize, keys: Vec<bytes::Bytes>) {
    if keys.is_empty() {
        return;
    }
    if let strata_engine::Read::Pending(f) = engine.warm(db, keys) {
        let _ = f.await;
    }
}

/// The connection's pub/sub listener (made on first use).
pub fn listener<'a>(
    pubsub: &Arc<crate::services::pubsub::PubSub>,
    conn: &'a mut ConnState,
) -> &'a mut crate::services::pubsub::Listener {
    let handle = conn.handle.clone();
    conn.pubsub.get_or_insert_with(|| pubsub.listener(handle))
}
