//! What a connection carries that commands change (`ConnState`: SELECT,
//! HELLO, AUTH, CLIENT, MULTI, SUBSCRIBE ...), handed to every command in
//! its `Ctx`.

use crate::registry::CommandSpec;
use crate::services::clients::ClientHandle;
use bytes::Bytes;
use std::sync::Arc;
use strata_protocol::Version;

/// Per-connection state that commands change (SELECT, HELLO, CLIENT ...).
pub struct ConnState {
    pub db: usize,
    pub version: Version,
    pub handle: Arc<ClientHandle>,
    /// False until AUTH succeeds when the default user needs a password.
    pub authenticated: bool,
    /// The ACL user it runs as (the default user until AUTH).
    pub user: Arc<crate::services::acl::User>,
    /// The open transaction (after MULTI).
    pub multi: Option<Multi>,
    /// The keys WATCHed.
    pub watched: strata_engine::Watched,
    /// What it listens to (after SUBSCRIBE ...), and its message queue.
    pub pubsub: Option<crate::services::pubsub::Listener>,
    /// While EXEC runs: where its commands report keys blocked clients
    /// wait on (`command::ReadySink`); its blocking commands do not block.
    pub exec_ready: Option<super::Deferred>,
    /// CLIENT CACHING's answer, for the next command (client tracking).
    pub caching: Option<bool>,
    /// CLIENT NO-TOUCH ON: its reads leave keys' access times alone.
    pub no_touch: bool,
    /// The client a script's `redis.call` runs as.
    pub script: bool,
    /// A script's declared keys (KEYS): what client tracking remembers for
    /// its caller when the script runs a read, as Redis remembers them.
    pub script_keys: Vec<Bytes>,
    /// It ran MONITOR (`services::monitor`).
    pub monitor: bool,
}

/// A transaction being queued (MULTI ... EXEC).
#[derive(Default)]
pub struct Multi {
    pub(crate) queued: Vec<(&'static CommandSpec, Vec<Bytes>)>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub(crate) failed: bool,
}
