//! Strata's one configuration type, [`Config`], and everything that turns raw
//! input (a redis.conf-style file, `--name value` command-line options,
//! `CONFIG SET`) into it.
//!
//! What this module owns:
//!
//! * the option table ([`options`]): exactly one [`OptionDef`] per option,
//!   giving its name, default (as text), one-line doc, whether `CONFIG SET`
//!   may change it at runtime, and how to parse and render it. The table is
//!   the single source for `--help` ([`help_text`]), `CONFIG GET`
//!   ([`Config::get_matching`]), `CONFIG SET` ([`Config::set`]) and file and
//!   command-line parsing. No option is listed anywhere else.
//! * the defaults, as named `DEFAULT_*` constants;
//! * the redis.conf lexer (Redis's `sdssplitargs` rules for quotes and
//!   escapes) and size parser ([`parse_size`], Redis's `memtoll` rules).
//!
//! Invariants:
//!
//! * Raw input is checked once. Parsing first collects *directives* (name +
//!   arguments + where they came from: file line or command line), then
//!   applies them in order to [`Config::default`]; command-line directives
//!   come after the file's, so they override it. Every value in a [`Config`]
//!   has passed its option's validation, and computed defaults (`threads`,
//!   `maxmemory-ram`) are stored already resolved to numbers.
//! * Every error names the option and the offending value (and, for files,
//!   the line number and text).
//! * `CONFIG SET` either applies the whole value or leaves the `Config`
//!   untouched.
//! * Names are case-insensitive everywhere; values of enumerated options are
//!   case-insensitive too (as in Redis) and rendered in lower case.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

use crate::glob::glob_match;

// ---------------------------------------------------------------------------
// Defaults and limits
// ---------------------------------------------------------------------------

/// Default TCP port.
pub const DEFAULT_PORT: u16 = 6379;
/// Default listen address.
pub const DEFAULT_BIND: &str = "127.0.0.1";
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

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Why configuration input was refused. Every variant names the option (and
/// the value, where there is one).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config file could not be read.
    #[error("can't read config file '{}': {source}", .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A line of a config file is bad (unknown directive, wrong number of
    /// arguments, invalid value, unbalanced quotes).
    #[error("bad config at line {line}: '{text}' — {reason}")]
    BadLine {
        line: usize,
        text: String,
        reason: String,
    },
    /// A `--name value...` command-line option is bad.
    #[error("bad option --{name}: {reason}")]
    BadArg { name: String, reason: String },
    /// A command-line argument that is neither the config file (first
    /// position) nor an option nor an option's value.
    #[error("unexpected argument '{0}' (options are written --name value)")]
    UnexpectedArg(String),
    /// `CONFIG SET` of an option that does not exist.
    #[error("unknown option '{0}'")]
    UnknownOption(String),
    /// `CONFIG SET` of an option that can only be set at startup.
    #[error("can't set immutable config '{0}'")]
    Immutable(String),
    /// `CONFIG SET` with a value the option refuses.
    #[error("bad value for {name}: {reason}")]
    InvalidValue { name: String, reason: String },
}

impl ConfigError {
    /// The Redis error reply for this error, without the leading `-` (and
    /// without CR/LF, so it is always a valid simple error).
    pub fn redis_error_text(&self) -> String {
        let text = match self {
            ConfigError::UnknownOption(name) => {
                format!("ERR Unknown option or number of arguments for CONFIG SET - '{name}'")
            }
            ConfigError::Immutable(name) => format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
            ),
            ConfigError::InvalidValue { name, reason } => {
                format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")
            }
            other => format!("ERR {other}"),
        };
        text.replace(['\r', '\n'], " ")
    }
}

// ---------------------------------------------------------------------------
// Enumerated option values
// ---------------------------------------------------------------------------

/// What happens when `maxmemory` is reached.
#[derive(Clone, Debug, PartialEq)]
pub enum MaxmemoryPolicy {
    /// `noeviction`: refuse writes that need memory.
    NoEviction,
    /// `allkeys-lru`: evict approximately least recently used keys.
    AllkeysLru,
    /// `allkeys-random`: evict random keys.
    AllkeysRandom,
}

impl MaxmemoryPolicy {
    /// The Redis name of the policy.
    pub fn as_str(&self) -> &'static str {
        match self {
            MaxmemoryPolicy::NoEviction => "noeviction",
            MaxmemoryPolicy::AllkeysLru => "allkeys-lru",
            MaxmemoryPolicy::AllkeysRandom => "allkeys-random",
        }
    }
}

impl FromStr for MaxmemoryPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "noeviction" => Ok(MaxmemoryPolicy::NoEviction),
            "allkeys-lru" => Ok(MaxmemoryPolicy::AllkeysLru),
            "allkeys-random" => Ok(MaxmemoryPolicy::AllkeysRandom),
            "volatile-lru" | "volatile-lfu" | "allkeys-lfu" | "volatile-random"
            | "volatile-ttl" => Err(format!(
                "maxmemory-policy '{s}' is not supported yet \
                 (supported: noeviction, allkeys-lru, allkeys-random)"
            )),
            _ => Err(format!(
                "invalid maxmemory-policy '{s}' (expected noeviction, allkeys-lru or allkeys-random)"
            )),
        }
    }
}

/// When a value stored on flash is brought back to RAM.
#[derive(Clone, Debug, PartialEq)]
pub enum PromotePolicy {
    /// `first`: on the first read.
    FirstRead,
    /// `second`: on the second read within the recency window.
    SecondRead,
    /// `never`: values are read from flash in place.
    Never,
}

impl PromotePolicy {
    /// The configuration name of the policy.
    pub fn as_str(&self) -> &'static str {
        match self {
            PromotePolicy::FirstRead => "first",
            PromotePolicy::SecondRead => "second",
            PromotePolicy::Never => "never",
        }
    }
}

impl FromStr for PromotePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "first" => Ok(PromotePolicy::FirstRead),
            "second" => Ok(PromotePolicy::SecondRead),
            "never" => Ok(PromotePolicy::Never),
            _ => Err(format!(
                "invalid promote policy '{s}' (expected first, second or never)"
            )),
        }
    }
}

/// How the flash log is accessed.
#[derive(Clone, Debug, PartialEq)]
pub enum IoBackend {
    /// `auto`: io_uring when the kernel allows it, else psync.
    Auto,
    /// `io_uring`: io_uring only (startup fails if unavailable).
    IoUring,
    /// `psync`: pread/pwrite on a thread pool.
    Psync,
}

impl IoBackend {
    /// The configuration name of the backend.
    pub fn as_str(&self) -> &'static str {
        match self {
            IoBackend::Auto => "auto",
            IoBackend::IoUring => "io_uring",
            IoBackend::Psync => "psync",
        }
    }
}

impl FromStr for IoBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(IoBackend::Auto),
            "io_uring" => Ok(IoBackend::IoUring),
            "psync" => Ok(IoBackend::Psync),
            _ => Err(format!(
                "invalid I/O backend '{s}' (expected auto, io_uring or psync)"
            )),
        }
    }
}

/// Log verbosity, with Redis's names.
#[derive(Clone, Debug, PartialEq)]
pub enum LogLevel {
    /// `debug`: a lot of information.
    Debug,
    /// `verbose`: useful information, less than debug.
    Verbose,
    /// `notice`: moderately verbose (production).
    Notice,
    /// `warning`: only important messages.
    Warning,
    /// `nothing`: nothing at all.
    Nothing,
}

impl LogLevel {
    /// The Redis name of the level.
    pub fn as_str(&self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Verbose => "verbose",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Nothing => "nothing",
        }
    }
}

impl FromStr for LogLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "debug" => Ok(LogLevel::Debug),
            "verbose" => Ok(LogLevel::Verbose),
            "notice" => Ok(LogLevel::Notice),
            "warning" => Ok(LogLevel::Warning),
            "nothing" => Ok(LogLevel::Nothing),
            _ => Err(format!(
                "invalid log level '{s}' (expected debug, verbose, notice, warning or nothing)"
            )),
        }
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(MaxmemoryPolicy, PromotePolicy, IoBackend, LogLevel);

// ---------------------------------------------------------------------------
// Config
// ---------------------------------------------------------------------------

/// The checked server configuration. Build it with [`Config::from_args`],
/// [`Config::from_conf_str`] or [`Config::default`]; change it at runtime
/// with [`Config::set`].
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// TCP port to listen on; 0 = do not listen. Default: 6379.
    pub port: u16,
    /// Addresses to listen on (`bind a b c` takes several). Default: `["127.0.0.1"]`.
    pub bind: Vec<String>,
    /// TCP port of the Memcached protocol (same `bind`, database 0); 0 =
    /// off. Default: 11211.
    pub memcached_port: u16,
    /// Bytes: largest value a memcached client may store. Default: 1mb.
    pub memcached_max_item_size: u64,
    /// Working directory for data files. Default: `./strata-data`.
    pub dir: PathBuf,
    /// Number of logical databases, 1..=1024. Default: 16.
    pub databases: usize,
    /// Bytes of data (RAM + flash) before the eviction policy applies;
    /// 0 = no limit beyond `flash_max_size`. Default: 0.
    pub maxmemory: u64,
    /// Bytes of RAM for keys and hot values (resolved; the option also
    /// accepts `N%` of physical RAM). Default: 50% of physical RAM.
    pub maxmemory_ram: u64,
    /// What to do when `maxmemory` is reached. Default: `noeviction`.
    pub maxmemory_policy: MaxmemoryPolicy,
    /// Directory of the flash log; `None` = `<dir>/flash` (see
    /// [`Config::flash_dir`]). Default: `None`.
    pub flash_dir: Option<PathBuf>,
    /// Bytes of flash the log may use; 0 = deduced at startup by the engine
    /// from the partition's free space. Default: 0.
    pub flash_max_size: u64,
    /// Bytes per flash log segment, 1mb..=1gb. Default: 64mb.
    pub flash_segment_size: u64,
    /// Flash I/O backend. Default: `auto`.
    pub flash_io: IoBackend,
    /// Open flash files with O_DIRECT. Default: yes.
    pub flash_direct_io: bool,
    /// Bytes: values smaller than this always stay in RAM. Default: 64.
    pub tiering_min_value_size: usize,
    /// When a flash value is promoted back to RAM. Default: `second`.
    pub tiering_promote: PromotePolicy,
    /// Worker threads (resolved; the option's 0 means the number of CPUs),
    /// at most 256. Default: number of CPUs.
    pub threads: usize,
    /// Bytes: largest bulk string a client may send, at least 1mb.
    /// Default: 512mb.
    pub proto_max_bulk_len: u64,
    /// Maximum simultaneous clients. Default: 10000.
    pub maxclients: usize,
    /// Seconds a client may stay idle before being closed; 0 = never.
    /// Default: 0.
    pub timeout: u64,
    /// Background task runs per second, 1..=500. Default: 10.
    pub hz: u32,
    /// Microseconds: commands slower than this are logged in the slowlog;
    /// negative disables the slowlog, 0 logs every command. Default: 10000.
    pub slowlog_log_slower_than: i64,
    /// Milliseconds; events at least this long are sampled (0: off).
    pub latency_monitor_threshold: u64,
    /// Entries kept in the slowlog. Default: 128.
    pub slowlog_max_len: usize,
    /// Log verbosity. Default: `notice`.
    pub loglevel: LogLevel,
    /// Log file path; "" = standard output. Default: "".
    pub logfile: String,
    /// Password clients must AUTH with; `None` = none (config value "").
    /// Default: `None`.
    pub requirepass: Option<String>,
    /// Journal every change to the flash log. Default: yes.
    pub appendonly: bool,
    /// `always`, `everysec` or `no`. Default: `everysec`.
    pub appendfsync: String,
    /// RDB save points, accepted for compatibility and ignored
    /// (normalised: pairs separated by single spaces). Default: "".
    pub save: String,
    /// Only `no` is accepted. Default: no.
    pub daemonize: bool,
    /// The thresholds of Redis's small encodings, which decide what OBJECT
    /// ENCODING reports (Redis 7.0's defaults: 128, 64, 512, 128, 64).
    pub hash_max_listpack_entries: u64,
    pub hash_max_listpack_value: u64,
    pub set_max_intset_entries: u64,
    pub zset_max_listpack_entries: u64,
    pub zset_max_listpack_value: u64,
    pub stream_node_max_bytes: u64,
    pub stream_node_max_entries: u64,
    /// A sparse HyperLogLog growing past this many bytes becomes dense.
    pub hll_sparse_max_bytes: u64,
    /// Accepted for compatibility; no effect on Strata's layout.
    /// Defaults: -2 and 0.
    pub list_max_listpack_size: i64,
    pub list_compress_depth: u64,
    pub aof_use_rdb_preamble: bool,
    /// Milliseconds a script may run before other clients get `-BUSY`
    /// (and SCRIPT KILL may stop it). Default: 5000.
    pub busy_reply_threshold: u64,
    /// Output limits per client class (normal, replica, pubsub): hard
    /// bytes, soft bytes, soft seconds (0 = none). Only pubsub's are
    /// enforced (a subscriber's queued messages). Default: Redis's.
    pub client_output_buffer_limit: [[u64; 3]; 3],
    /// `enable-debug-command`: "no", "yes" or "local" (loopback clients).
    pub enable_debug_command: String,
    /// `tracking-table-max-keys`: keys client tracking remembers, at most.
    pub tracking_table_max_keys: u64,
    /// `notify-keyspace-events`, as `session::notify` flags.
    pub notify_keyspace_events: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            port: DEFAULT_PORT,
            memcached_port: 11211,
            memcached_max_item_size: 1 << 20,
            bind: vec![DEFAULT_BIND.to_string()],
            dir: PathBuf::from(DEFAULT_DIR),
            databases: DEFAULT_DATABASES,
            maxmemory: DEFAULT_MAXMEMORY,
            maxmemory_ram: percent_of_ram(DEFAULT_MAXMEMORY_RAM_PERCENT),
            maxmemory_policy: DEFAULT_MAXMEMORY_POLICY,
            flash_dir: None,
            flash_max_size: DEFAULT_FLASH_MAX_SIZE,
            flash_segment_size: DEFAULT_FLASH_SEGMENT_SIZE,
            flash_io: DEFAULT_FLASH_IO,
            flash_direct_io: DEFAULT_FLASH_DIRECT_IO,
            tiering_min_value_size: DEFAULT_TIERING_MIN_VALUE_SIZE,
            tiering_promote: DEFAULT_TIERING_PROMOTE,
            threads: cpu_count(),
            proto_max_bulk_len: DEFAULT_PROTO_MAX_BULK_LEN,
            maxclients: DEFAULT_MAXCLIENTS,
            timeout: DEFAULT_TIMEOUT,
            hz: DEFAULT_HZ,
            slowlog_log_slower_than: DEFAULT_SLOWLOG_LOG_SLOWER_THAN,
            latency_monitor_threshold: 0,
            slowlog_max_len: DEFAULT_SLOWLOG_MAX_LEN,
            loglevel: DEFAULT_LOGLEVEL,
            logfile: String::new(),
            requirepass: None,
            appendonly: DEFAULT_APPENDONLY,
            appendfsync: DEFAULT_APPENDFSYNC.to_string(),
            save: String::new(),
            daemonize: false,
            notify_keyspace_events: 0,
            tracking_table_max_keys: 1_000_000,
            enable_debug_command: "no".into(),
            client_output_buffer_limit: [
                [0, 0, 0],
                [256 << 20, 64 << 20, 60],
                [32 << 20, 8 << 20, 60],
            ],
            busy_reply_threshold: 5000,
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            stream_node_max_bytes: 4096,
            hll_sparse_max_bytes: 3000,
            stream_node_max_entries: 100,
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            aof_use_rdb_preamble: true,
        }
    }
}

/// Where a directive came from (for error messages).
#[derive(Debug)]
enum Origin {
    /// A config file line: number (1-based) and trimmed text.
    Line(usize, String),
    /// A `--name value...` command-line option.
    Arg,
}

/// One raw, unchecked directive: the "low-level" form of the input.
#[derive(Debug)]
struct Directive {
    origin: Origin,
    name: String,
    args: Vec<String>,
}

impl Directive {
    fn error(&self, reason: String) -> ConfigError {
        match &self.origin {
            Origin::Line(line, text) => ConfigError::BadLine {
                line: *line,
                text: text.clone(),
                reason,
            },
            Origin::Arg => ConfigError::BadArg {
                name: self.name.clone(),
                reason,
            },
        }
    }
}

impl Config {
    /// Builds the configuration from the command line, like redis-server:
    /// `args` is argv WITHOUT the program name. The first argument, if it does
    /// not start with `--`, is the config file path (read from disk). Then
    /// come `--name value [value...]` options (values run until the next
    /// argument starting with `--`), which override the file.
    pub fn from_args<I: IntoIterator<Item = String>>(args: I) -> Result<Config, ConfigError> {
        let mut args = args.into_iter().peekable();
        let mut file = None;
        if let Some(first) = args.next_if(|a| !a.starts_with("--")) {
            file = Some(PathBuf::from(first));
        }
        let mut cli = Vec::new();
        while let Some(arg) = args.next() {
            let name = match arg.strip_prefix("--") {
                Some(name) if !name.is_empty() => name.to_ascii_lowercase(),
                _ => return Err(ConfigError::UnexpectedArg(arg)),
            };
            let mut values = Vec::new();
            while let Some(v) = args.next_if(|a| !a.starts_with("--")) {
                values.push(v);
            }
            cli.push(Directive {
                origin: Origin::Arg,
                name,
                args: values,
            });
        }
        let mut directives = match &file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
                    path: path.clone(),
                    source,
                })?;
                parse_conf(&text)?
            }
            None => Vec::new(),
        };
        directives.extend(cli);
        Config::from_directives(directives)
    }

    /// Builds the configuration from the text of a config file alone.
    pub fn from_conf_str(text: &str) -> Result<Config, ConfigError> {
        Config::from_directives(parse_conf(text)?)
    }

    /// Applies directives in order to the defaults: the one place raw input
    /// becomes a checked `Config`.
    fn from_directives(directives: Vec<Directive>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        for d in &directives {
            let def = find_option(&d.name)
                .ok_or_else(|| d.error(format!("unknown option '{}'", d.name)))?;
            def.apply(&mut config, &d.args)
                .map_err(|reason| match d.origin {
                    // A file line may hold any option: say which one failed.
                    Origin::Line(..) => d.error(format!("{}: {reason}", def.name)),
                    // `--name` is already in the message.
                    Origin::Arg => d.error(reason),
                })?;
        }
        Ok(config)
    }

    /// Directory of the flash log: `flash-dir` if set, else `<dir>/flash`.
    /// Whether `maxmemory-policy` evicts keys (rather than refusing writes).
    pub fn maxmemory_policy_evicts(&self) -> bool {
        self.maxmemory_policy != MaxmemoryPolicy::NoEviction
    }

    pub fn flash_dir(&self) -> PathBuf {
        match &self.flash_dir {
            Some(dir) => dir.clone(),
            None => self.dir.join("flash"),
        }
    }

    /// `CONFIG GET`: `(name, value)` for every option whose name matches the
    /// glob `pattern` (case-insensitive), in table order. Sizes are rendered
    /// as plain byte counts, like Redis.
    pub fn get_matching(&self, pattern: &[u8]) -> Vec<(String, String)> {
        OPTIONS
            .iter()
            .filter(|def| glob_match(pattern, def.name.as_bytes(), true))
            .map(|def| (def.name.to_string(), (def.get)(self)))
            .collect()
    }

    /// The current value of one option, rendered as `CONFIG GET` would
    /// (`None` if no option has that name; case-insensitive).
    pub fn get(&self, name: &str) -> Option<String> {
        find_option(name).map(|def| (def.get)(self))
    }

    /// `CONFIG SET name value`: validates and applies one option if it may be
    /// changed at runtime; on error the config is unchanged. Options taking
    /// several arguments (`save`) split `value` on whitespace, like Redis.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        let def = find_option(name).ok_or_else(|| ConfigError::UnknownOption(name.to_string()))?;
        let args: Vec<String> = match def.set {
            Setter::One(_) => vec![value.to_string()],
            Setter::Many(_) => {
                let parts: Vec<String> = value.split_ascii_whitespace().map(String::from).collect();
                if parts.is_empty() {
                    vec![String::new()]
                } else {
                    parts
                }
            }
        };
        let mut updated = self.clone();
        let applied = def.apply(&mut updated, &args);
        if !def.runtime {
            // An option read only at startup may be "set" to the value it
            // has (test harnesses do so): no change. Any other value is
            // refused, as Redis refuses an immutable option.
            if applied.is_ok() && (def.get)(&updated) == (def.get)(self) {
                return Ok(());
            }
            return Err(ConfigError::Immutable(def.name.to_string()));
        }
        applied.map_err(|reason| ConfigError::InvalidValue {
            name: def.name.to_string(),
            reason,
        })?;
        *self = updated;
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// The option table
// ---------------------------------------------------------------------------

/// How an option takes its arguments.
#[derive(Clone, Copy, Debug)]
enum Setter {
    /// Exactly one argument.
    One(fn(&mut Config, &str) -> Result<(), String>),
    /// One or more arguments.
    Many(fn(&mut Config, &[String]) -> Result<(), String>),
}

/// One configuration option: the single definition used for parsing,
/// `--help`, `CONFIG GET` and `CONFIG SET`.
#[derive(Debug)]
pub struct OptionDef {
    /// Lower-case name, as written in the file (`name`) and on the command
    /// line (`--name`).
    pub name: &'static str,
    /// The default, as it would be written in the config file.
    pub default: &'static str,
    /// One-line description (with unit).
    pub doc: &'static str,
    /// Whether `CONFIG SET` may change it at runtime.
    pub runtime: bool,
    set: Setter,
    get: fn(&Config) -> String,
}

impl OptionDef {
    /// Checks arity, then parses and stores the arguments. Returns the reason
    /// on error (naming the value; the caller adds the option name).
    fn apply(&self, config: &mut Config, args: &[String]) -> Result<(), String> {
        match self.set {
            Setter::One(f) => match args {
                [value] => f(config, value),
                _ => Err(format!(
                    "wrong number of arguments (expected 1, got {})",
                    args.len()
                )),
            },
            Setter::Many(f) => {
                if args.is_empty() {
                    Err("wrong number of arguments (expected at least 1, got 0)".to_string())
                } else {
                    f(config, args)
                }
            }
        }
    }
}

/// All options, in the order of `CONFIG GET *` and `--help`.
pub fn options() -> &'static [OptionDef] {
    OPTIONS
}

fn find_option(name: &str) -> Option<&'static OptionDef> {
    OPTIONS
        .iter()
        .find(|def| def.name.eq_ignore_ascii_case(name))
}

static OPTIONS: &[OptionDef] = &[
    OptionDef {
        name: "port",
        default: "6379",
        doc: "TCP port to listen on; 0 = do not listen",
        runtime: false,
        set: Setter::One(|c, v| {
            c.port = parse_uint(v, 0, u16::MAX as u64, "port")? as u16;
            Ok(())
        }),
        get: |c| c.port.to_string(),
    },
    OptionDef {
        name: "memcached-port",
        default: "11211",
        doc: "TCP port of the Memcached protocol (text and meta; same bind; database 0); 0 = off",
        runtime: false,
        set: Setter::One(|c, v| {
            c.memcached_port = parse_uint(v, 0, u16::MAX as u64, "memcached-port")? as u16;
            Ok(())
        }),
        get: |c| c.memcached_port.to_string(),
    },
    OptionDef {
        name: "memcached-max-item-size",
        default: "1mb",
        doc: "bytes; largest value a memcached client may store (1k to 1gb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.memcached_max_item_size = parse_size_arg(v, 1024, 1 << 30)?;
            Ok(())
        }),
        get: |c| c.memcached_max_item_size.to_string(),
    },
    OptionDef {
        name: "bind",
        default: "127.0.0.1",
        doc: "addresses to listen on (one or more)",
        runtime: false,
        set: Setter::Many(|c, args| {
            if let Some(bad) = args
                .iter()
                .find(|a| a.is_empty() || a.contains(char::is_whitespace))
            {
                return Err(format!("invalid address '{bad}'"));
            }
            c.bind = args.to_vec();
            Ok(())
        }),
        get: |c| c.bind.join(" "),
    },
    OptionDef {
        name: "dir",
        default: "./strata-data",
        doc: "working directory for data files",
        runtime: false,
        set: Setter::One(|c, v| {
            if v.is_empty() {
                return Err("directory must not be empty".to_string());
            }
            c.dir = PathBuf::from(v);
            Ok(())
        }),
        get: |c| path_text(&c.dir),
    },
    OptionDef {
        name: "databases",
        default: "16",
        doc: "number of logical databases (1..1024)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.databases = parse_uint(v, 1, MAX_DATABASES as u64, "number of databases")? as usize;
            Ok(())
        }),
        get: |c| c.databases.to_string(),
    },
    OptionDef {
        name: "maxmemory",
        default: "0",
        doc:
            "bytes of data in RAM + flash before maxmemory-policy applies; 0 = up to flash-max-size",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory = parse_size_arg(v, 0, u64::MAX)?;
            Ok(())
        }),
        get: |c| c.maxmemory.to_string(),
    },
    OptionDef {
        name: "maxmemory-ram",
        default: "50%",
        doc: "bytes of RAM for keys and hot values, or N% of physical RAM",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory_ram = match v.strip_suffix('%') {
                Some(pct) => {
                    let pct = parse_uint(pct, 1, 100, "percentage")
                        .map_err(|_| format!("invalid percentage '{v}' (expected 1% to 100%)"))?;
                    percent_of_ram(pct)
                }
                None => parse_size_arg(v, 1, u64::MAX)?,
            };
            Ok(())
        }),
        get: |c| c.maxmemory_ram.to_string(),
    },
    OptionDef {
        name: "maxmemory-policy",
        default: "noeviction",
        doc: "when maxmemory is reached: noeviction, allkeys-lru or allkeys-random",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxmemory_policy = v.parse()?;
            Ok(())
        }),
        get: |c| c.maxmemory_policy.to_string(),
    },
    OptionDef {
        name: "flash-dir",
        default: "",
        doc: "directory of the flash log; \"\" = <dir>/flash",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_dir = if v.is_empty() {
                None
            } else {
                Some(PathBuf::from(v))
            };
            Ok(())
        }),
        get: |c| c.flash_dir.as_deref().map(path_text).unwrap_or_default(),
    },
    OptionDef {
        name: "flash-max-size",
        default: "0",
        doc: "bytes of flash the log may use; 0 = deduced from the partition's free space",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_max_size = parse_size_arg(v, 0, u64::MAX)?;
            Ok(())
        }),
        get: |c| c.flash_max_size.to_string(),
    },
    OptionDef {
        name: "flash-segment-size",
        default: "64mb",
        doc: "bytes per flash log segment (1mb..1gb)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_segment_size =
                parse_size_arg(v, MIN_FLASH_SEGMENT_SIZE, MAX_FLASH_SEGMENT_SIZE)?;
            Ok(())
        }),
        get: |c| c.flash_segment_size.to_string(),
    },
    OptionDef {
        name: "flash-io",
        default: "auto",
        doc: "flash I/O backend: auto, io_uring or psync",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_io = v.parse()?;
            Ok(())
        }),
        get: |c| c.flash_io.to_string(),
    },
    OptionDef {
        name: "flash-direct-io",
        default: "yes",
        doc: "open flash files with O_DIRECT (yes/no)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.flash_direct_io = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.flash_direct_io),
    },
    OptionDef {
        name: "tiering-min-value-size",
        default: "64",
        doc: "bytes; smaller values always stay in RAM",
        runtime: true,
        set: Setter::One(|c, v| {
            let size = parse_size_arg(v, 0, u64::MAX)?;
            c.tiering_min_value_size =
                usize::try_from(size).map_err(|_| format!("size '{v}' is too large"))?;
            Ok(())
        }),
        get: |c| c.tiering_min_value_size.to_string(),
    },
    OptionDef {
        name: "tiering-promote",
        default: "second",
        doc: "when a flash value moves back to RAM: first, second (read) or never",
        runtime: true,
        set: Setter::One(|c, v| {
            c.tiering_promote = v.parse()?;
            Ok(())
        }),
        get: |c| c.tiering_promote.to_string(),
    },
    OptionDef {
        name: "threads",
        default: "0",
        doc: "worker threads (up to 256); 0 = number of CPUs",
        runtime: false,
        set: Setter::One(|c, v| {
            let n = parse_uint(v, 0, MAX_THREADS as u64, "thread count")? as usize;
            c.threads = if n == 0 { cpu_count() } else { n };
            Ok(())
        }),
        get: |c| c.threads.to_string(),
    },
    OptionDef {
        name: "proto-max-bulk-len",
        default: "512mb",
        doc: "bytes; largest bulk string a client may send (at least 1mb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.proto_max_bulk_len = parse_size_arg(v, MIN_PROTO_MAX_BULK_LEN, i64::MAX as u64)?;
            Ok(())
        }),
        get: |c| c.proto_max_bulk_len.to_string(),
    },
    OptionDef {
        name: "maxclients",
        default: "10000",
        doc: "maximum simultaneous clients",
        runtime: true,
        set: Setter::One(|c, v| {
            c.maxclients = parse_uint(v, 1, MAX_MAXCLIENTS as u64, "client count")? as usize;
            Ok(())
        }),
        get: |c| c.maxclients.to_string(),
    },
    OptionDef {
        name: "timeout",
        default: "0",
        doc: "seconds a client may stay idle before it is closed; 0 = never",
        runtime: true,
        set: Setter::One(|c, v| {
            c.timeout = parse_uint(v, 0, i32::MAX as u64, "timeout")?;
            Ok(())
        }),
        get: |c| c.timeout.to_string(),
    },
    OptionDef {
        name: "hz",
        default: "10",
        doc: "background task runs per second (1..500)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hz = parse_uint(v, MIN_HZ as u64, MAX_HZ as u64, "frequency")? as u32;
            Ok(())
        }),
        get: |c| c.hz.to_string(),
    },
    OptionDef {
        name: "slowlog-log-slower-than",
        default: "10000",
        doc: "microseconds; slower commands go to the slowlog; negative disables it",
        runtime: true,
        set: Setter::One(|c, v| {
            c.slowlog_log_slower_than =
                parse_int(v).ok_or_else(|| format!("invalid integer '{v}'"))?;
            Ok(())
        }),
        get: |c| c.slowlog_log_slower_than.to_string(),
    },
    OptionDef {
        name: "latency-monitor-threshold",
        default: "0",
        doc: "milliseconds; commands and expiry cycles at least this long are sampled for LATENCY (0: off)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.latency_monitor_threshold = parse_uint(v, 0, i64::MAX as u64, "latency-monitor-threshold")?;
            Ok(())
        }),
        get: |c| c.latency_monitor_threshold.to_string(),
    },
    OptionDef {
        name: "slowlog-max-len",
        default: "128",
        doc: "entries kept in the slowlog",
        runtime: true,
        set: Setter::One(|c, v| {
            let n = parse_uint(v, 0, i64::MAX as u64, "length")?;
            c.slowlog_max_len =
                usize::try_from(n).map_err(|_| format!("length '{v}' is too large"))?;
            Ok(())
        }),
        get: |c| c.slowlog_max_len.to_string(),
    },
    OptionDef {
        name: "loglevel",
        default: "notice",
        doc: "log verbosity: debug, verbose, notice, warning or nothing",
        runtime: true,
        set: Setter::One(|c, v| {
            c.loglevel = v.parse()?;
            Ok(())
        }),
        get: |c| c.loglevel.to_string(),
    },
    OptionDef {
        name: "logfile",
        default: "",
        doc: "log file path; \"\" = standard output",
        runtime: false,
        set: Setter::One(|c, v| {
            c.logfile = v.to_string();
            Ok(())
        }),
        get: |c| c.logfile.clone(),
    },
    OptionDef {
        name: "requirepass",
        default: "",
        doc: "password clients must AUTH with; \"\" = none",
        runtime: true,
        set: Setter::One(|c, v| {
            c.requirepass = if v.is_empty() {
                None
            } else {
                Some(v.to_string())
            };
            Ok(())
        }),
        get: |c| c.requirepass.clone().unwrap_or_default(),
    },
    OptionDef {
        name: "appendonly",
        default: "yes",
        doc: "journal every change to the flash log (yes: durable per appendfsync; no: a crash loses the data, a clean shutdown keeps it)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.appendonly = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.appendonly),
    },
    OptionDef {
        name: "aof-use-rdb-preamble",
        default: "yes",
        doc: "accepted for compatibility (Redis's AOF rewrite format); the journal is Strata's log",
        runtime: true,
        set: Setter::One(|c, v| {
            c.aof_use_rdb_preamble = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.aof_use_rdb_preamble),
    },
    OptionDef {
        name: "appendfsync",
        default: "everysec",
        doc: "when journaled writes are synced: always (before the reply), everysec (a crash loses about 1 s) or no",
        runtime: true,
        set: Setter::One(|c, v| {
            let lower = v.to_ascii_lowercase();
            if !APPENDFSYNC_VALUES.contains(&lower.as_str()) {
                return Err(format!(
                    "invalid appendfsync '{v}' (expected always, everysec or no)"
                ));
            }
            c.appendfsync = lower;
            Ok(())
        }),
        get: |c| c.appendfsync.clone(),
    },
    OptionDef {
        name: "hash-max-listpack-entries",
        default: "128",
        doc: "fields a hash may have and still report the listpack encoding (OBJECT ENCODING)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hash_max_listpack_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.hash_max_listpack_entries.to_string(),
    },
    OptionDef {
        name: "hash-max-ziplist-entries",
        default: "128",
        doc: "alias of hash-max-listpack-entries",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hash_max_listpack_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.hash_max_listpack_entries.to_string(),
    },
    OptionDef {
        name: "hash-max-listpack-value",
        default: "64",
        doc: "bytes; longest field or value of a listpack-encoded hash",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hash_max_listpack_value = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.hash_max_listpack_value.to_string(),
    },
    OptionDef {
        name: "hash-max-ziplist-value",
        default: "64",
        doc: "alias of hash-max-listpack-value",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hash_max_listpack_value = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.hash_max_listpack_value.to_string(),
    },
    OptionDef {
        name: "set-max-intset-entries",
        default: "512",
        doc: "members an all-integer set may have and still report intset",
        runtime: true,
        set: Setter::One(|c, v| {
            c.set_max_intset_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.set_max_intset_entries.to_string(),
    },
    OptionDef {
        name: "zset-max-listpack-entries",
        default: "128",
        doc: "members a sorted set may have and still report listpack",
        runtime: true,
        set: Setter::One(|c, v| {
            c.zset_max_listpack_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.zset_max_listpack_entries.to_string(),
    },
    OptionDef {
        name: "zset-max-ziplist-entries",
        default: "128",
        doc: "alias of zset-max-listpack-entries",
        runtime: true,
        set: Setter::One(|c, v| {
            c.zset_max_listpack_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.zset_max_listpack_entries.to_string(),
    },
    OptionDef {
        name: "zset-max-listpack-value",
        default: "64",
        doc: "bytes; longest member of a listpack-encoded sorted set",
        runtime: true,
        set: Setter::One(|c, v| {
            c.zset_max_listpack_value = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.zset_max_listpack_value.to_string(),
    },
    OptionDef {
        name: "zset-max-ziplist-value",
        default: "64",
        doc: "alias of zset-max-listpack-value",
        runtime: true,
        set: Setter::One(|c, v| {
            c.zset_max_listpack_value = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.zset_max_listpack_value.to_string(),
    },
    OptionDef {
        name: "stream-node-max-bytes",
        default: "4096",
        doc: "bytes; a stream node (Redis's listpack, modelled) takes no entry past this size",
        runtime: true,
        set: Setter::One(|c, v| {
            c.stream_node_max_bytes = parse_size_arg(v, 0, i64::MAX as u64)?;
            Ok(())
        }),
        get: |c| c.stream_node_max_bytes.to_string(),
    },
    OptionDef {
        name: "hll-sparse-max-bytes",
        default: "3000",
        doc: "bytes; a sparse HyperLogLog growing past this size becomes dense (Redis's encoding choice)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.hll_sparse_max_bytes = parse_size_arg(v, 0, i64::MAX as u64)?;
            Ok(())
        }),
        get: |c| c.hll_sparse_max_bytes.to_string(),
    },
    OptionDef {
        name: "stream-node-max-entries",
        default: "100",
        doc: "entries (live and deleted) a stream node holds before a new one starts",
        runtime: true,
        set: Setter::One(|c, v| {
            c.stream_node_max_entries = parse_uint(v, 0, i64::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.stream_node_max_entries.to_string(),
    },
    OptionDef {
        name: "list-compress-depth",
        default: "0",
        doc: "accepted for compatibility (Redis's quicklist compression); lists are stored as Strata's records",
        runtime: true,
        set: Setter::One(|c, v| {
            c.list_compress_depth = parse_uint(v, 0, i32::MAX as u64, "count")?;
            Ok(())
        }),
        get: |c| c.list_compress_depth.to_string(),
    },
    OptionDef {
        name: "list-max-listpack-size",
        default: "-2",
        doc: "accepted for compatibility (Redis's quicklist node size: entries if positive, -1..-5 = 4kb..64kb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.list_max_listpack_size = parse_int(v)
                .filter(|n| i32::try_from(*n).is_ok())
                .ok_or_else(|| format!("'{v}' is not a valid integer"))?;
            Ok(())
        }),
        get: |c| c.list_max_listpack_size.to_string(),
    },
    OptionDef {
        name: "list-max-ziplist-size",
        default: "-2",
        doc: "accepted for compatibility (Redis's quicklist node size: entries if positive, -1..-5 = 4kb..64kb)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.list_max_listpack_size = parse_int(v)
                .filter(|n| i32::try_from(*n).is_ok())
                .ok_or_else(|| format!("'{v}' is not a valid integer"))?;
            Ok(())
        }),
        get: |c| c.list_max_listpack_size.to_string(),
    },
    OptionDef {
        name: "save",
        default: "",
        doc: "RDB save points \"<seconds> <changes> ...\" (accepted for compatibility, ignored)",
        runtime: true,
        set: Setter::Many(|c, args| {
            c.save = parse_save(args)?;
            Ok(())
        }),
        get: |c| c.save.clone(),
    },
    OptionDef {
        name: "client-output-buffer-limit",
        default: "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        doc: "<class> <hard> <soft> <soft seconds> ... (class: normal, replica, pubsub; only pubsub's limit subscribers)",
        runtime: true,
        set: Setter::Many(|c, args| {
            c.client_output_buffer_limit = parse_output_limits(args, c.client_output_buffer_limit)?;
            Ok(())
        }),
        get: |c| {
            let l = &c.client_output_buffer_limit;
            ["normal", "slave", "pubsub"]
                .iter()
                .zip(l)
                .map(|(n, [h, s, t])| format!("{n} {h} {s} {t}"))
                .collect::<Vec<_>>()
                .join(" ")
        },
    },
    OptionDef {
        name: "enable-debug-command",
        default: "no",
        doc: "who may run DEBUG: no, yes, or local (clients on a loopback address), as Redis",
        runtime: false,
        set: Setter::One(|c, v| {
            let v = v.to_ascii_lowercase();
            if !["no", "yes", "local"].contains(&v.as_str()) {
                return Err("argument must be one of the following: no, yes, local".into());
            }
            c.enable_debug_command = v;
            Ok(())
        }),
        get: |c| c.enable_debug_command.clone(),
    },
    OptionDef {
        name: "tracking-table-max-keys",
        default: "1000000",
        doc: "keys client tracking remembers at most; past it, keys are dropped and their readers told (0 = no limit)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.tracking_table_max_keys = parse_uint(v, 0, i64::MAX as u64, "keys")?;
            Ok(())
        }),
        get: |c| c.tracking_table_max_keys.to_string(),
    },
    OptionDef {
        name: "notify-keyspace-events",
        default: "",
        doc: "keyspace notification classes (K, E, g, $, l, s, h, z, x, e, n, A ...), as Redis",
        runtime: true,
        set: Setter::One(|c, v| {
            c.notify_keyspace_events = crate::session::notify::parse(v)
                .ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
            Ok(())
        }),
        get: |c| crate::session::notify::render(c.notify_keyspace_events),
    },
    OptionDef {
        name: "busy-reply-threshold",
        default: "5000",
        doc: "milliseconds a script may run before other clients get -BUSY and SCRIPT KILL may stop it",
        runtime: true,
        set: Setter::One(|c, v| {
            c.busy_reply_threshold = parse_uint(v, 0, i64::MAX as u64, "milliseconds")?;
            Ok(())
        }),
        get: |c| c.busy_reply_threshold.to_string(),
    },
    OptionDef {
        name: "lua-time-limit",
        default: "5000",
        doc: "alias of busy-reply-threshold",
        runtime: true,
        set: Setter::One(|c, v| {
            c.busy_reply_threshold = parse_uint(v, 0, i64::MAX as u64, "milliseconds")?;
            Ok(())
        }),
        get: |c| c.busy_reply_threshold.to_string(),
    },
    OptionDef {
        name: "daemonize",
        default: "no",
        doc: "only \"no\" is supported (run under a supervisor instead)",
        runtime: false,
        set: Setter::One(|c, v| {
            if parse_bool(v)? {
                return Err("daemonize yes is not supported".to_string());
            }
            c.daemonize = false;
            Ok(())
        }),
        get: |c| bool_text(c.daemonize),
    },
];

/// The `--help` text: usage and a table of every option, with default and
/// description, generated from the option table. The caller prints the
/// version line.
pub fn help_text() -> String {
    let shown_default = |def: &OptionDef| {
        if def.default.is_empty() {
            "\"\"".to_string()
        } else {
            def.default.to_string()
        }
    };
    let name_width = OPTIONS.iter().map(|d| d.name.len()).max().unwrap_or(0) + 2;
    let default_width = OPTIONS
        .iter()
        .map(|d| shown_default(d).len())
        .max()
        .unwrap_or(0)
        .max("DEFAULT".len());
    let mut out = String::new();
    out.push_str("Usage: strata-server [/path/to/strata.conf] [--option value ...]\n");
    out.push_str("       strata-server -h | --help\n");
    out.push_str("       strata-server -v | --version\n\n");
    out.push_str(
        "The config file uses redis.conf syntax: one `option value...` per line,\n\
         '#' starts a comment line, values may be \"double\" or 'single' quoted.\n\
         Command-line options (--option value) override the file.\n\
         Sizes are bytes or use k (1000), kb (1024), m, mb, g, gb suffixes.\n\
         Options marked * can be changed at runtime with CONFIG SET.\n\n",
    );
    out.push_str(&format!(
        "  {:<nw$}   {:<dw$}  DESCRIPTION\n",
        "OPTION",
        "DEFAULT",
        nw = name_width,
        dw = default_width
    ));
    for def in OPTIONS {
        out.push_str(&format!(
            "  --{:<nw$} {} {:<dw$}  {}\n",
            def.name,
            if def.runtime { '*' } else { ' ' },
            shown_default(def),
            def.doc,
            nw = name_width - 2,
            dw = default_width
        ));
    }
    out
}

// ---------------------------------------------------------------------------
// Value parsers (each returns a reason naming the value on error)
// ---------------------------------------------------------------------------

/// Parses a size with Redis's `memtoll` rules: digits, optionally followed by
/// a case-insensitive unit `b` (1), `k` (1000), `kb` (1024), `m` (10^6),
/// `mb` (2^20), `g` (10^9) or `gb` (2^30). Rejects signs, fractions,
/// whitespace, unknown units, empty input and overflow of `u64`.
pub fn parse_size(s: &str) -> Option<u64> {
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(mul)
}

fn parse_size_arg(v: &str, min: u64, max: u64) -> Result<u64, String> {
    let n = parse_size(v).ok_or_else(|| {
        format!("invalid size '{v}' (expected bytes, or a number with k/kb/m/mb/g/gb)")
    })?;
    if n < min || n > max {
        return Err(if max == u64::MAX {
            format!("size '{v}' is too small (minimum {min} bytes)")
        } else {
            format!("size '{v}' is out of range ({min} to {max} bytes)")
        });
    }
    Ok(n)
}

/// Strict unsigned integer: ASCII digits only (no sign, no spaces).
fn parse_uint(v: &str, min: u64, max: u64, what: &str) -> Result<u64, String> {
    let n = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse::<u64>().ok()
    } else {
        None
    };
    match n {
        Some(n) if n >= min && n <= max => Ok(n),
        Some(_) => Err(format!("{what} '{v}' is out of range ({min} to {max})")),
        None if what == "port" => Err(format!("'{v}' is not a valid port")),
        None => Err(format!("'{v}' is not a valid {what} (expected an integer)")),
    }
}

/// Strict signed integer: optional `-`, then ASCII digits.
fn parse_int(v: &str) -> Option<i64> {
    let digits = v.strip_prefix('-').unwrap_or(v);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

fn parse_bool(v: &str) -> Result<bool, String> {
    if v.eq_ignore_ascii_case("yes") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("no") {
        Ok(false)
    } else {
        Err(format!("'{v}' is not a boolean (expected yes or no)"))
    }
}

/// `save ""` or `save <seconds> <changes> [<seconds> <changes> ...]`,
/// normalised to single spaces.
fn parse_save(args: &[String]) -> Result<String, String> {
    if let [only] = args {
        if only.is_empty() {
            return Ok(String::new());
        }
        // A single quoted argument such as "900 1 300 10".
        let parts: Vec<String> = only.split_ascii_whitespace().map(String::from).collect();
        if parts.len() > 1 {
            return parse_save(&parts);
        }
    }
    let raw = args.join(" ");
    if args.chunks(2).any(|pair| pair.len() != 2)
        || args
            .iter()
            .any(|a| parse_uint(a, 0, i32::MAX as u64, "").is_err())
    {
        return Err(format!(
            "invalid save parameters '{raw}' (expected \"\" or <seconds> <changes> pairs)"
        ));
    }
    Ok(raw)
}

/// `client-output-buffer-limit`: groups of class, hard, soft, seconds
/// (sizes may have units), changing those classes of `old`.
fn parse_output_limits(args: &[String], old: [[u64; 3]; 3]) -> Result<[[u64; 3]; 3], String> {
    let words: Vec<&str> = args
        .iter()
        .flat_map(|a| a.split_ascii_whitespace())
        .collect();
    let invalid = || format!("Invalid argument '{}'", args.join(" "));
    if words.is_empty() || !words.len().is_multiple_of(4) {
        return Err(invalid());
    }
    let mut new = old;
    for g in words.chunks(4) {
        let class = match g[0].to_ascii_lowercase().as_str() {
            "normal" => 0,
            "slave" | "replica" => 1,
            "pubsub" => 2,
            _ => return Err(invalid()),
        };
        let size = |w: &str| parse_size(w).ok_or_else(invalid);
        let secs = g[3].parse::<u64>().map_err(|_| invalid())?;
        new[class] = [size(g[1])?, size(g[2])?, secs];
    }
    Ok(new)
}

fn bool_text(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

fn path_text(p: &Path) -> String {
    p.display().to_string()
}

/// Number of CPUs, capped at [`MAX_THREADS`].
fn cpu_count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(MAX_THREADS)
}

/// `pct`% of physical RAM, in bytes.
fn percent_of_ram(pct: u64) -> u64 {
    let ram = physical_ram();
    // Divide first when large, so the product cannot overflow.
    if ram > u64::MAX / 100 {
        ram / 100 * pct
    } else {
        ram * pct / 100
    }
}

/// Physical RAM in bytes (`_SC_PHYS_PAGES * _SC_PAGESIZE`), read once.
fn physical_ram() -> u64 {
    static RAM: OnceLock<u64> = OnceLock::new();
    *RAM.get_or_init(|| read_physical_ram().unwrap_or(FALLBACK_PHYSICAL_RAM))
}

#[cfg(unix)]
fn read_physical_ram() -> Option<u64> {
    // SAFETY: sysconf has no preconditions; it only queries system values.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if pages <= 0 || page_size <= 0 {
        return None;
    }
    (pages as u64).checked_mul(page_size as u64)
}

#[cfg(not(unix))]
fn read_physical_ram() -> Option<u64> {
    None
}

// ---------------------------------------------------------------------------
// redis.conf lexer
// ---------------------------------------------------------------------------

/// Splits a config file into directives. Lines are trimmed; empty lines and
/// lines whose first non-blank character is `#` are skipped (as in Redis, a
/// `#` later in a line is an ordinary argument character).
fn parse_conf(text: &str) -> Result<Vec<Directive>, ConfigError> {
    let mut directives = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |reason: String| ConfigError::BadLine {
            line: i + 1,
            text: line.to_string(),
            reason,
        };
        let mut words = split_args(line).map_err(bad)?;
        if words.is_empty() {
            continue;
        }
        let name = words.remove(0).to_ascii_lowercase();
        directives.push(Directive {
            origin: Origin::Line(i + 1, line.to_string()),
            name,
            args: words,
        });
    }
    Ok(directives)
}

/// Redis's `sdssplitargs`: whitespace-separated words; `"..."` with
/// backslash escapes (`\n \r \t \b \a \\ \" \xHH`), `'...'` with only `\'`;
/// a closing quote must be followed by whitespace or the end of the line.
fn split_args(line: &str) -> Result<Vec<String>, String> {
    let bytes = line.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= bytes.len() {
            return Ok(words);
        }
        let mut word: Vec<u8> = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let c = bytes.get(i).copied();
            if in_double {
                match c {
                    None => return Err("unbalanced quotes".to_string()),
                    Some(b'\\')
                        if i + 3 < bytes.len()
                            && bytes[i + 1] == b'x'
                            && bytes[i + 2].is_ascii_hexdigit()
                            && bytes[i + 3].is_ascii_hexdigit() =>
                    {
                        let hex = std::str::from_utf8(&bytes[i + 2..i + 4]).unwrap_or("0");
                        word.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                        i += 3;
                    }
                    Some(b'\\') if i + 1 < bytes.len() => {
                        i += 1;
                        word.push(match bytes[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if bytes.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                            return Err("closing quote must be followed by a space".to_string());
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => word.push(other),
                }
            } else if in_single {
                match c {
                    None => return Err("unbalanced quotes".to_string()),
                    Some(b'\\') if bytes.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        word.push(b'\'');
                    }
                    Some(b'\'') => {
                        if bytes.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                            return Err("closing quote must be followed by a space".to_string());
                        }
                        i += 1;
                        break;
                    }
                    Some(other) => word.push(other),
                }
            } else {
                match c {
                    None => break,
                    Some(b) if b.is_ascii_whitespace() => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(other) => word.push(other),
                }
            }
            i += 1;
        }
        words.push(String::from_utf8(word).map_err(|_| "argument is not valid UTF-8".to_string())?);
    }
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// A config file in the temp dir, removed on drop.
    struct TempConf(PathBuf);
    impl TempConf {
        fn new(tag: &str, text: &str) -> TempConf {
            let path = std::env::temp_dir().join(format!(
                "strata-config-test-{}-{tag}.conf",
                std::process::id()
            ));
            std::fs::write(&path, text).unwrap();
            TempConf(path)
        }
        fn path(&self) -> String {
            self.0.display().to_string()
        }
    }
    impl Drop for TempConf {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn defaults() {
        let c = Config::default();
        assert_eq!(c.port, 6379);
        assert_eq!(c.bind, vec!["127.0.0.1".to_string()]);
        assert_eq!(c.dir, PathBuf::from("./strata-data"));
        assert_eq!(c.databases, 16);
        assert_eq!(c.maxmemory, 0);
        assert!(c.maxmemory_ram > 0);
        assert_eq!(c.maxmemory_ram, physical_ram() / 2);
        assert_eq!(c.maxmemory_policy, MaxmemoryPolicy::NoEviction);
        assert_eq!(c.flash_dir, None);
        assert_eq!(c.flash_dir(), PathBuf::from("./strata-data").join("flash"));
        assert_eq!(c.flash_max_size, 0);
        assert_eq!(c.flash_segment_size, 64 << 20);
        assert_eq!(c.flash_io, IoBackend::Auto);
        assert!(c.flash_direct_io);
        assert_eq!(c.tiering_min_value_size, 64);
        assert_eq!(c.tiering_promote, PromotePolicy::SecondRead);
        assert!(c.threads >= 1 && c.threads <= MAX_THREADS);
        assert_eq!(c.proto_max_bulk_len, 512 << 20);
        assert_eq!(c.maxclients, 10000);
        assert_eq!(c.timeout, 0);
        assert_eq!(c.hz, 10);
        assert_eq!(c.slowlog_log_slower_than, 10000);
        assert_eq!(c.slowlog_max_len, 128);
        assert_eq!(c.loglevel, LogLevel::Notice);
        assert_eq!(c.logfile, "");
        assert_eq!(c.requirepass, None);
        assert!(c.appendonly);
        assert_eq!(c.appendfsync, "everysec");
        assert_eq!(c.save, "");
        assert!(!c.daemonize);
        // An empty file and an empty command line give the defaults.
        assert_eq!(Config::from_conf_str("").unwrap(), c);
        assert_eq!(Config::from_args(Vec::new()).unwrap(), c);
    }

    #[test]
    fn table_defaults_match_default_impl() {
        // Parsing each option's documented default leaves Config::default()
        // unchanged: the help text and CONFIG GET cannot drift from the code.
        for def in OPTIONS {
            let mut c = Config::default();
            def.apply(&mut c, &[def.default.to_string()])
                .unwrap_or_else(|e| panic!("default of {} does not parse: {e}", def.name));
            assert_eq!(
                c,
                Config::default(),
                "default text of {} disagrees",
                def.name
            );
        }
    }

    #[test]
    fn table_is_well_formed() {
        let mut names: Vec<&str> = OPTIONS.iter().map(|d| d.name).collect();
        for name in &names {
            assert_eq!(*name, name.to_ascii_lowercase());
            assert!(!name.is_empty());
        }
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "an option is listed twice");
        // One option per Config field, and the four ziplist aliases.
        assert_eq!(before, 53, "one option per Config field (plus aliases)");
        let runtime: Vec<&str> = OPTIONS
            .iter()
            .filter(|d| d.runtime)
            .map(|d| d.name)
            .collect();
        assert_eq!(
            runtime,
            [
                "memcached-max-item-size",
                "maxmemory",
                "maxmemory-ram",
                "maxmemory-policy",
                "tiering-min-value-size",
                "tiering-promote",
                "proto-max-bulk-len",
                "maxclients",
                "timeout",
                "hz",
                "slowlog-log-slower-than",
                "latency-monitor-threshold",
                "slowlog-max-len",
                "loglevel",
                "requirepass",
                "aof-use-rdb-preamble",
                "appendfsync",
                "hash-max-listpack-entries",
                "hash-max-ziplist-entries",
                "hash-max-listpack-value",
                "hash-max-ziplist-value",
                "set-max-intset-entries",
                "zset-max-listpack-entries",
                "zset-max-ziplist-entries",
                "zset-max-listpack-value",
                "zset-max-ziplist-value",
                "stream-node-max-bytes",
                "hll-sparse-max-bytes",
                "stream-node-max-entries",
                "list-compress-depth",
                "list-max-listpack-size",
                "list-max-ziplist-size",
                "save",
                "client-output-buffer-limit",
                "tracking-table-max-keys",
                "notify-keyspace-events",
                "busy-reply-threshold",
                "lua-time-limit",
            ]
        );
    }

    #[test]
    fn sizes() {
        let table: &[(&str, Option<u64>)] = &[
            ("0", Some(0)),
            ("123", Some(123)),
            ("123b", Some(123)),
            ("1k", Some(1000)),
            ("1kb", Some(1024)),
            ("1K", Some(1000)),
            ("1KB", Some(1024)),
            ("1kB", Some(1024)),
            ("2m", Some(2_000_000)),
            ("2mb", Some(2 << 20)),
            ("3g", Some(3_000_000_000)),
            ("3GB", Some(3 << 30)),
            ("64mb", Some(64 << 20)),
            ("18446744073709551615", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("18446744073709551615kb", None),
            ("17179869184gb", None),
            ("", None),
            ("kb", None),
            ("-1", None),
            ("+1", None),
            ("1.5mb", None),
            ("12q", None),
            ("1 mb", None),
            (" 1", None),
            ("1t", None),
            ("1tb", None),
            ("0x10", None),
        ];
        for &(text, expected) in table {
            assert_eq!(parse_size(text), expected, "parse_size({text:?})");
        }
    }

    #[test]
    fn file_parsing() {
        let text = "\
# a comment
   # an indented comment

PORT 7000
bind 10.0.0.1 \"::1\"   '192.168.1.1'
Dir \"/var/lib/strata data\"
maxmemory 1GB
maxmemory-policy ALLKEYS-LRU
requirepass 'it\\'s a \"secret\"'
logfile \"a\\tb\\x41\\n\"
flash-direct-io No
slowlog-log-slower-than -1
save 900 1 300 10
\tthreads 3\r
";
        let c = Config::from_conf_str(text).unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, args(&["10.0.0.1", "::1", "192.168.1.1"]));
        assert_eq!(c.dir, PathBuf::from("/var/lib/strata data"));
        assert_eq!(c.flash_dir(), PathBuf::from("/var/lib/strata data/flash"));
        assert_eq!(c.maxmemory, 1 << 30);
        assert_eq!(c.maxmemory_policy, MaxmemoryPolicy::AllkeysLru);
        assert_eq!(c.requirepass.as_deref(), Some("it's a \"secret\""));
        assert_eq!(c.logfile, "a\tbA\n");
        assert!(!c.flash_direct_io);
        assert_eq!(c.slowlog_log_slower_than, -1);
        assert_eq!(c.save, "900 1 300 10");
        assert_eq!(c.threads, 3);
        // Later directives override earlier ones.
        assert_eq!(Config::from_conf_str("port 1\nport 2").unwrap().port, 2);
        // Quoting in the middle of a word joins, as in sdssplitargs.
        assert_eq!(
            Config::from_conf_str("logfile a\"b c\"").unwrap().logfile,
            "ab c"
        );
        // An empty quoted argument.
        assert_eq!(
            Config::from_conf_str("flash-dir \"\"").unwrap().flash_dir,
            None
        );
        assert_eq!(
            Config::from_conf_str("flash-dir /mnt/nvme")
                .unwrap()
                .flash_dir(),
            PathBuf::from("/mnt/nvme")
        );
    }

    #[test]
    fn file_errors_name_line_option_and_value() {
        let err = Config::from_conf_str("port 1\n\n# c\n\n\n\nmaxmemory 12q\n").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ConfigError::BadLine { line: 7, .. }), "{msg}");
        assert!(
            msg.starts_with("bad config at line 7: 'maxmemory 12q' — "),
            "{msg}"
        );
        assert!(msg.contains("maxmemory: invalid size '12q'"), "{msg}");

        let msg = Config::from_conf_str("frobnicate 3")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("line 1") && msg.contains("unknown option 'frobnicate'"),
            "{msg}"
        );

        let msg = Config::from_conf_str("port").unwrap_err().to_string();
        assert!(msg.contains("port: wrong number of arguments"), "{msg}");
        let msg = Config::from_conf_str("port 1 2").unwrap_err().to_string();
        assert!(msg.contains("port: wrong number of arguments"), "{msg}");

        for bad in [
            "logfile \"abc",
            "logfile 'abc",
            "logfile \"a\"b",
            "logfile 'a'b",
        ] {
            let msg = Config::from_conf_str(bad).unwrap_err().to_string();
            assert!(msg.contains("quote"), "{bad}: {msg}");
        }
        // A trailing comment is not a comment (Redis rule): arity error.
        assert!(Config::from_conf_str("port 6379 # default").is_err());
    }

    #[test]
    fn every_bad_value_names_its_option() {
        let cases: &[(&str, &str)] = &[
            ("port", "abc"),
            ("port", "65536"),
            ("port", "-1"),
            ("bind", "\"\""),
            ("dir", "\"\""),
            ("databases", "0"),
            ("databases", "1025"),
            ("maxmemory", "12q"),
            ("maxmemory", "-5"),
            ("maxmemory-ram", "101%"),
            ("maxmemory-ram", "0"),
            ("maxmemory-ram", "lots"),
            ("maxmemory-policy", "volatile-lru"),
            ("maxmemory-policy", "bogus"),
            ("flash-max-size", "1.5gb"),
            ("flash-segment-size", "512kb"),
            ("flash-segment-size", "2gb"),
            ("flash-io", "aio"),
            ("flash-direct-io", "maybe"),
            ("tiering-min-value-size", "small"),
            ("tiering-promote", "third"),
            ("threads", "257"),
            ("threads", "many"),
            ("proto-max-bulk-len", "1000"),
            ("maxclients", "0"),
            ("timeout", "-1"),
            ("hz", "0"),
            ("hz", "501"),
            ("slowlog-log-slower-than", "fast"),
            ("slowlog-max-len", "-1"),
            ("loglevel", "loud"),
            ("appendonly", "1"),
            ("appendfsync", "sometimes"),
            ("save", "900"),
            ("save", "x 1"),
            ("daemonize", "yes"),
            ("daemonize", "perhaps"),
        ];
        for &(name, value) in cases {
            let shown = value.trim_matches('"');
            let line = format!("{name} {value}");
            let msg = Config::from_conf_str(&line).unwrap_err().to_string();
            assert!(msg.contains(&format!("'{line}'")), "file {line}: {msg}");
            assert!(msg.contains(&format!("{name}:")), "file {line}: {msg}");
            let names_value = |msg: &str| {
                msg.contains(&format!("'{shown}'")) || msg.contains(&format!("{name} {shown}"))
            };
            if !shown.is_empty() {
                assert!(names_value(&msg), "file {line}: {msg}");
            }
            let msg = Config::from_args(args(&[&format!("--{name}"), shown]))
                .unwrap_err()
                .to_string();
            assert!(
                msg.starts_with(&format!("bad option --{name}: ")),
                "cli {line}: {msg}"
            );
            if !shown.is_empty() {
                assert!(names_value(&msg), "cli {line}: {msg}");
            }
        }
        let msg = Config::from_args(args(&["--port", "abc"]))
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("bad option --port: "), "{msg}");
        assert_eq!(msg, "bad option --port: 'abc' is not a valid port");
        let msg = Config::from_conf_str("maxmemory-policy allkeys-lfu")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("'allkeys-lfu' is not supported yet"), "{msg}");
        let msg = Config::from_conf_str("daemonize yes")
            .unwrap_err()
            .to_string();
        assert!(msg.contains("daemonize yes is not supported"), "{msg}");
    }

    #[test]
    fn command_line() {
        let c = Config::from_args(args(&[
            "--port",
            "7001",
            "--bind",
            "0.0.0.0",
            "::",
            "--SLOWLOG-LOG-SLOWER-THAN",
            "-1",
            "--save",
            "",
        ]))
        .unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.bind, args(&["0.0.0.0", "::"]));
        assert_eq!(c.slowlog_log_slower_than, -1);
        assert_eq!(c.save, "");

        let err = Config::from_args(args(&["--port"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--port") && err.contains("wrong number of arguments"),
            "{err}"
        );
        let err = Config::from_args(args(&["--nosuch", "1"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--nosuch") && err.contains("unknown option"),
            "{err}"
        );
        let err = Config::from_args(args(&["a.conf", "b.conf"])).unwrap_err();
        assert!(
            matches!(err, ConfigError::UnexpectedArg(ref a) if a == "b.conf"),
            "{err}"
        );
        let err = Config::from_args(args(&["--"])).unwrap_err();
        assert!(matches!(err, ConfigError::UnexpectedArg(_)), "{err}");
        let err = Config::from_args(args(&["/nonexistent/strata.conf"])).unwrap_err();
        assert!(matches!(err, ConfigError::Io { .. }));
        assert!(
            err.to_string().contains("/nonexistent/strata.conf"),
            "{err}"
        );
    }

    #[test]
    fn command_line_overrides_file() {
        let conf = TempConf::new(
            "override",
            "port 7000\nhz 20\nbind 10.0.0.1\nloglevel debug\n",
        );
        let c =
            Config::from_args(args(&[&conf.path(), "--port", "7001", "--bind", "a", "b"])).unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.bind, args(&["a", "b"]));
        assert_eq!(c.hz, 20);
        assert_eq!(c.loglevel, LogLevel::Debug);
        let c = Config::from_args(args(&[&conf.path()])).unwrap();
        assert_eq!(c.port, 7000);

        // File errors keep their line numbers when read through from_args.
        let bad = TempConf::new("bad", "port 1\nhz 0\n");
        let err = Config::from_args(args(&[&bad.path(), "--hz", "5"])).unwrap_err();
        assert!(matches!(err, ConfigError::BadLine { line: 2, .. }), "{err}");
    }

    #[test]
    fn config_set_get_round_trip() {
        let mut c = Config::default();
        let cases: &[(&str, &str, &str)] = &[
            ("maxmemory", "2gb", "2147483648"),
            ("maxmemory-ram", "100mb", "104857600"),
            ("maxmemory-policy", "allkeys-random", "allkeys-random"),
            ("maxmemory-policy", "AllKeys-LRU", "allkeys-lru"),
            ("tiering-min-value-size", "1k", "1000"),
            ("tiering-promote", "never", "never"),
            ("timeout", "300", "300"),
            ("hz", "100", "100"),
            ("slowlog-log-slower-than", "-1", "-1"),
            ("slowlog-max-len", "1024", "1024"),
            ("loglevel", "WARNING", "warning"),
            ("proto-max-bulk-len", "1gb", "1073741824"),
            ("maxclients", "50", "50"),
            ("appendfsync", "always", "always"),
            ("save", "900 1  300 10", "900 1 300 10"),
            ("save", "", ""),
            ("requirepass", "s3cret", "s3cret"),
            ("requirepass", "", ""),
        ];
        for &(name, value, shown) in cases {
            c.set(name, value)
                .unwrap_or_else(|e| panic!("set {name} {value}: {e}"));
            assert_eq!(
                c.get_matching(name.as_bytes()),
                vec![(name.to_string(), shown.to_string())]
            );
            assert_eq!(c.get(&name.to_ascii_uppercase()).as_deref(), Some(shown));
        }
        assert_eq!(c.maxmemory, 2 << 30);
        assert_eq!(c.requirepass, None);
        c.set("requirepass", "pw").unwrap();
        assert_eq!(c.requirepass.as_deref(), Some("pw"));
        c.set("maxmemory-ram", "25%").unwrap();
        assert_eq!(c.maxmemory_ram, percent_of_ram(25));
        // Names are case-insensitive.
        c.set("HZ", "42").unwrap();
        assert_eq!(c.hz, 42);

        // Every option's rendered value parses back to the same config.
        let c2 = {
            let mut text = String::new();
            for (name, value) in c.get_matching(b"*") {
                text.push_str(&format!("{name} \"{value}\"\n"));
            }
            Config::from_conf_str(&text).unwrap()
        };
        assert_eq!(c2, c);

        // Bad values are refused and leave the config unchanged.
        let before = c.clone();
        let err = c.set("hz", "0").unwrap_err();
        assert!(matches!(err, ConfigError::InvalidValue { .. }));
        let text = err.redis_error_text();
        assert!(
            text.starts_with("ERR CONFIG SET failed (possibly related to argument 'hz') - "),
            "{text}"
        );
        assert!(c.set("save", "900").is_err());
        assert!(c
            .set("maxmemory", "1\r\nPING")
            .unwrap_err()
            .redis_error_text()
            .find(['\r', '\n'])
            .is_none());
        assert_eq!(c, before);
    }

    #[test]
    fn config_get_patterns() {
        let c = Config::default();
        let all = c.get_matching(b"*");
        assert_eq!(all.len(), OPTIONS.len());
        assert_eq!(all[0], ("port".to_string(), "6379".to_string()));
        let names =
            |p: &[u8]| -> Vec<String> { c.get_matching(p).into_iter().map(|(n, _)| n).collect() };
        assert_eq!(
            names(b"maxmemory*"),
            ["maxmemory", "maxmemory-ram", "maxmemory-policy"]
        );
        assert_eq!(names(b"MAXMEMORY"), ["maxmemory"]);
        assert_eq!(
            names(b"flash-*"),
            [
                "flash-dir",
                "flash-max-size",
                "flash-segment-size",
                "flash-io",
                "flash-direct-io"
            ]
        );
        assert_eq!(names(b"h?"), ["hz"]);
        assert!(names(b"nosuch").is_empty());
        assert_eq!(c.get("proto-max-bulk-len").as_deref(), Some("536870912"));
        assert_eq!(c.get("flash-segment-size").as_deref(), Some("67108864"));
        assert_eq!(c.get("bind").as_deref(), Some("127.0.0.1"));
        assert_eq!(c.get("flash-direct-io").as_deref(), Some("yes"));
        assert_eq!(c.get("requirepass").as_deref(), Some(""));
        assert_eq!(c.get("nosuch"), None);
    }

    #[test]
    fn immutables_and_unknowns_refused() {
        let mut c = Config::default();
        let mut refused = 0;
        for def in OPTIONS.iter().filter(|d| !d.runtime) {
            // Its own value is no change; another value is refused.
            let own = c.get(def.name).unwrap_or_default();
            assert!(c.set(def.name, &own).is_ok(), "{} {own}", def.name);
            let other = ["1", "no", "yes", "/nonexistent", "7"]
                .into_iter()
                .find(|v| {
                    let mut probe = c.clone();
                    find_option(def.name)
                        .is_some_and(|d| d.apply(&mut probe, &[v.to_string()]).is_ok())
                        && probe.get(def.name) != c.get(def.name)
                });
            let Some(other) = other else { continue };
            refused += 1;
            let err = c.set(def.name, other).unwrap_err();
            assert!(
                matches!(err, ConfigError::Immutable(ref n) if n == def.name),
                "{err}"
            );
            assert_eq!(
                err.redis_error_text(),
                format!(
                    "ERR CONFIG SET failed (possibly related to argument '{}') - can't set immutable config",
                    def.name
                )
            );
        }
        assert!(refused >= 5, "only {refused} immutable options were tried");
        let err = c.set("nosuch", "1").unwrap_err();
        assert!(matches!(err, ConfigError::UnknownOption(_)));
        assert_eq!(
            err.redis_error_text(),
            "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"
        );
        assert_eq!(c, Config::default());
    }

    #[test]
    fn help_lists_every_option() {
        let help = help_text();
        assert!(help.starts_with("Usage: strata-server"));
        for def in OPTIONS {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("--{} ", def.name)))
                .unwrap_or_else(|| panic!("--{} missing from help", def.name));
            assert!(line.contains(def.doc), "{line}");
            if !def.default.is_empty() {
                assert!(line.contains(def.default), "{line}");
            }
            assert_eq!(line.contains(" * "), def.runtime, "{line}");
        }
    }

    #[test]
    fn example_config_parses() {
        let in_crate = concat!(env!("CARGO_MANIFEST_DIR"), "/../../strata.conf");
        let path = if Path::new(in_crate).exists() {
            in_crate
        } else {
            "/work/main/strata.conf"
        };
        let text = std::fs::read_to_string(path).unwrap();
        let c = Config::from_conf_str(&text).unwrap();
        assert_eq!(c.port, 6379);
        assert_eq!(c.bind, args(&["127.0.0.1"]));
        assert_eq!(c.dir, PathBuf::from("./strata-data"));
        assert_eq!(c.flash_segment_size, 64 << 20);
        assert_eq!(c.maxmemory_policy, MaxmemoryPolicy::NoEviction);
        assert_eq!(c.tiering_promote, PromotePolicy::SecondRead);
        assert_eq!(c.proto_max_bulk_len, 512 << 20);
        // The example mentions every option.
        for def in OPTIONS {
            assert!(
                text.lines().any(|l| {
                    let l = l.trim_start_matches(['#', ' ']);
                    l.split_whitespace().next() == Some(def.name)
                }),
                "strata.conf does not mention {}",
                def.name
            );
        }
        // Through from_args too (reads the file from disk).
        assert_eq!(Config::from_args(args(&[path])).unwrap(), c);
    }
}
