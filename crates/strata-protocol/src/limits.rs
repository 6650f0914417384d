//! Size limits applied while decoding untrusted input.
//!
//! Every length read from the wire is checked against these before anything
//! is allocated or waited for.

/// Limits on what the decoders accept.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Longest bulk string accepted (Redis proto-max-bulk-len). Default 512 MiB.
    pub max_bulk_len: usize,
    /// Most elements in one multibulk request (and in one aggregate frame).
    /// Default 1 << 30.
    pub max_multibulk_len: usize,
    /// Longest inline command line / longest header line. Default 64 KiB
    /// (Redis PROTO_INLINE_MAX_SIZE).
    pub max_inline_len: usize,
    /// The client has not authenticated while a password is required:
    /// Redis's pre-AUTH limits apply (at most
    /// [`Limits::UNAUTHENTICATED_MULTIBULK_LEN`] arguments, bulks of at
    /// most [`Limits::UNAUTHENTICATED_BULK_LEN`] bytes), so a client that
    /// knows no password cannot make the server buffer much.
    pub unauthenticated: bool,
}

impl Limits {
    /// Default `max_bulk_len`: 512 MiB.
    pub const DEFAULT_MAX_BULK_LEN: usize = 512 * 1024 * 1024;
    /// Default `max_multibulk_len`: 1 << 30.
    pub const DEFAULT_MAX_MULTIBULK_LEN: usize = 1 << 30;
    /// Default `max_inline_len`: 64 KiB.
    pub const DEFAULT_MAX_INLINE_LEN: usize = 64 * 1024;
    /// Most arguments of a request before AUTH (Redis: 10).
    pub const UNAUTHENTICATED_MULTIBULK_LEN: i64 = 10;
    /// Longest bulk of a request before AUTH (Redis: 16384).
    pub const UNAUTHENTICATED_BULK_LEN: usize = 16384;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: Self::DEFAULT_MAX_BULK_LEN,
            max_multibulk_len: Self::DEFAULT_MAX_MULTIBULK_LEN,
            max_inline_len: Self::DEFAULT_MAX_INLINE_LEN,
            unauthenticated: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_redis() {
        let l = Limits::default();
        assert_eq!(l.max_bulk_len, 512 * 1024 * 1024);
        assert_eq!(l.max_multibulk_len, 1 << 30);
        assert_eq!(l.max_inline_len, 65536);
    }
}
