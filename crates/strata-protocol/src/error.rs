//! Protocol errors.
//!
//! `Display` yields the exact Redis error text without the leading `ERR `,
//! so the server replies `-ERR {e}\r\n` and closes the connection.

/// A malformed or over-limit input. Fatal for the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// `*<n>` header not a valid integer, or above `max_multibulk_len`.
    /// Also used for invalid aggregate lengths in frames.
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    /// `*<n>` above 10 from a client that has not authenticated
    /// ([`crate::Limits::unauthenticated`]).
    #[error("Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    /// `$<n>` above 16384 from a client that has not authenticated.
    #[error("Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
    /// `$<n>` header not a valid integer, negative, or above `max_bulk_len`.
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// A multibulk element did not start with `$`; holds the actual byte.
    #[error("Protocol error: expected '$', got '{}'", char::from(*.0))]
    ExpectedDollar(u8),
    /// `*` header line longer than `max_inline_len` with no line end yet.
    #[error("Protocol error: too big mbulk count string")]
    TooBigMbulkCount,
    /// `$` header line longer than `max_inline_len` with no line end yet.
    #[error("Protocol error: too big bulk count string")]
    TooBigBulkCount,
    /// Inline request line longer than `max_inline_len` with no newline yet.
    #[error("Protocol error: too big inline request")]
    TooBigInlineRequest,
    /// Inline request with unterminated quotes, or a closing quote not
    /// followed by a space or end of line.
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
    /// Bulk payload not followed by `\r\n` (Redis silently mis-parses).
    #[error("Protocol error: bulk string not terminated by CRLF")]
    BulkNotTerminated,
    /// Frame parser: a line longer than `max_inline_len` with no line end yet.
    #[error("Protocol error: too big line")]
    LineTooLong,
    /// Frame parser: `\r` not followed by `\n` at the end of a line.
    #[error("Protocol error: line not terminated by CRLF")]
    LineNotTerminated,
    /// Frame parser: unknown type byte; holds the actual byte.
    #[error("Protocol error: unknown frame type '{}'", char::from(*.0))]
    UnknownFrameType(u8),
    /// Frame parser: malformed `:` integer.
    #[error("Protocol error: invalid integer")]
    InvalidInteger,
    /// Frame parser: malformed `,` double.
    #[error("Protocol error: invalid double")]
    InvalidDouble,
    /// Frame parser: `#` not followed by `t` or `f`.
    #[error("Protocol error: invalid boolean")]
    InvalidBoolean,
    /// Frame parser: malformed `(` big number.
    #[error("Protocol error: invalid big number")]
    InvalidBigNumber,
    /// Frame parser: `=` payload shorter than 4 bytes or without `:` at 3.
    #[error("Protocol error: invalid verbatim string")]
    InvalidVerbatim,
    /// Frame parser: `_` followed by something other than CRLF.
    #[error("Protocol error: invalid null")]
    InvalidNull,
    /// Frame parser: aggregates nested deeper than the maximum.
    #[error("Protocol error: nesting too deep")]
    NestingTooDeep,
}
