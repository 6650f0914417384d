//! The wire protocols of Strata, RESP2/RESP3 and Memcached (text and meta):
//! parsing and encoding, nothing else.
//!
//! # What this crate owns
//! - [`decode_request`]: server-side decoding of client requests (multibulk and
//!   inline forms), mirroring Redis `processMultibulkBuffer` /
//!   `processInlineBuffer` including their exact error texts.
//! - [`Frame`] / [`parse_frame`]: a generic RESP2+RESP3 value and parser, for
//!   clients, tests and benchmarks.
//! - [`encode`](resp::encode): allocation-free reply writers for the server hot
//!   path, plus [`write_request`] for clients.
//! - [`Limits`] and [`ProtocolError`].
//!
//! # What it does not own
//! No I/O, no sockets, no async runtime, no storage, no command semantics.
//! Callers read bytes into a `BytesMut`, call the decoder, and write replies
//! produced by the writers.
//!
//! # Invariants
//! - No panic is reachable from input bytes (enforced by the crate-level
//!   clippy denies below, and by property tests and fuzz targets).
//! - Decoders never consume more than the buffer holds; on "need more bytes"
//!   the buffer is left untouched.
//! - Declared lengths are validated against [`Limits`] as soon as their header
//!   line is seen, so a hostile length never causes waiting or allocation.
//! - Results do not depend on how the input was split across reads.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing
    )
)]

pub mod error;
pub mod limits;
pub mod memcache;
pub mod resp;

pub use error::ProtocolError;
pub use limits::Limits;
pub use resp::encode::{
    write_array_len, write_bool, write_bulk, write_bulk_len, write_double, write_error,
    write_integer, write_map_len, write_null, write_null_array, write_push_len, write_request,
    write_set_len, write_simple, write_verbatim, Version,
};
pub use resp::frame::{parse_frame, Frame, Parsed, MAX_FRAME_DEPTH};
pub use resp::inline::split_args;
pub use resp::request::{
    decode_request, decode_request_into, peek_keys, peek_requests, MAX_PEEKED,
};
