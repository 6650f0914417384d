//! The options' defaults and the bounds their values are checked
//! against (the option table in `options/` uses them, and `Config::default`).

use super::{IoBackend, LogLevel, MaxmemoryPolicy, PromotePolicy};

/// Default TCP port.
pub const DEFAULT_PORT: u16 = 6379;
/// Default listen address.
/// Redis 7.0's default: IPv4 loopback, and IPv6 loopback where there is one
/// (`-`: an address that does not exist here is skipped).
pub const DEFAULT_BIND: &[&str] = &["127.0.0.1", "-::1"];
/// Default working directory.
pub const DEFAULT_DIR: &str = "./strata-data";
/// Default number of logical databases.
pub const DEFAULT_DATABASES: usize = 16;
/// Largest accepted `databases`.
pub const MAX_DATABASES: usize = 1024;
/// Default `maxmemory` (0 = no limit beyond `flash-max-size`).
pub const DEFAULT_MAXMEMORY: u64 = 0;
/// Default `maxmemory-ram`, as a percentage of physical RAM.
pub const DEFAULT_MAXMEMORY_RAM_PERCENT: u64 = 50;
/// Physical RAM assumed when the OS cannot tell us (bytes).
pub const FALLBACK_PHYSICAL_RAM: u64 = 1 << 30;
/// Default `maxmemory-policy`.
pub const DEFAULT_MAXMEMORY_POLICY: MaxmemoryPolicy = MaxmemoryPolicy::NoEviction;
/// Default `flash-max-size` (0 = deduced by the engine from free space).
pub const DEFAULT_FLASH_MAX_SIZE: u64 = 0;
/// Default flash segment size (bytes).
pub const DEFAULT_FLASH_SEGMENT_SIZE: u64 = 64 << 20;
/// Smallest accepted flash segment size (bytes).
pub const MIN_FLASH_SEGMENT_SIZE: u64 = 1 << 20;
/// Largest accepted flash segment size (bytes).
pub const MAX_FLASH_SEGMENT_SIZE: u64 = 1 << 30;
/// Default flash I/O backend.
pub const DEFAULT_FLASH_IO: IoBackend = IoBackend::Auto;
/// Default for `flash-direct-io`.
pub const DEFAULT_FLASH_DIRECT_IO: bool = true;
/// Default smallest value size (bytes) that may move to flash.
pub const DEFAULT_TIERING_MIN_VALUE_SIZE: usize = 64;
pub const DEFAULT_FLASH_GC_GARBAGE_RATIO: u64 = 1;
/// Default promotion policy.
pub const DEFAULT_TIERING_PROMOTE: PromotePolicy = PromotePolicy::SecondRead;
/// Largest accepted `threads`.
pub const MAX_THREADS: usize = 256;
/// Default `proto-max-bulk-len` (bytes).
pub const DEFAULT_PROTO_MAX_BULK_LEN: u64 = 512 << 20;
/// Smallest accepted `proto-max-bulk-len` (bytes), as in Redis.
pub const MIN_PROTO_MAX_BULK_LEN: u64 = 1 << 20;
/// Default `maxclients`.
pub const DEFAULT_MAXCLIENTS: usize = 10_000;
/// Largest accepted `maxclients`.
pub const MAX_MAXCLIENTS: usize = 1_000_000;
/// Default client idle timeout (seconds, 0 = never).
pub const DEFAULT_TIMEOUT: u64 = 0;
/// Default background task frequency (Hz).
pub const DEFAULT_HZ: u32 = 10;
/// Smallest accepted `hz`.
pub const MIN_HZ: u32 = 1;
/// Largest accepted `hz`.
pub const MAX_HZ: u32 = 500;
/// Default slowlog threshold (microseconds).
pub const DEFAULT_SLOWLOG_LOG_SLOWER_THAN: i64 = 10_000;
/// Default slowlog length (entries).
pub const DEFAULT_SLOWLOG_MAX_LEN: usize = 128;
/// Default log level.
pub const DEFAULT_LOGLEVEL: LogLevel = LogLevel::Notice;
/// Default `appendonly`: yes. Strata is a database first (the Redis on
/// Flash users we follow run with the AOF and fsync every second), and the
/// journal costs one sequential log write per change, which demotion then
/// reuses for free.
pub const DEFAULT_APPENDONLY: bool = true;
/// Default `appendfsync`.
pub const DEFAULT_APPENDFSYNC: &str = "everysec";
/// Accepted `appendfsync` values.
pub const APPENDFSYNC_VALUES: [&str; 3] = ["always", "everysec", "no"];
