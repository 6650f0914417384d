//! The services commands use, each one per server and held in `Shared`:
//! users and permissions (`acl`), the configuration (`config`, and how it
//! sets up the engine: `engine_config`), clients and their buffers'
//! limits (`clients`), measurements (`metrics`), TLS's configuration
//! (`tls`), pub/sub (`pubsub`), clients blocked on keys (`blocking`),
//! client-side caching (`tracking`), keyspace notifications (`notify`),
//! MONITOR (`monitor`) and the scripts' cache and VM (`scripts`).
//!
//! A service knows no command, connection or loop: it imports only the
//! registry and the base below it (and other services).

pub mod acl;
pub mod blocking;
pub mod clients;
pub mod config;
pub mod engine_config;
pub mod metrics;
pub mod monitor;
pub mod notify;
pub mod pubsub;
pub mod scripts;
pub mod tls;
pub mod tracking;
