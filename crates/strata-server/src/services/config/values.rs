//! The configuration's errors and its enumerated values (maxmemory-policy,
//! tiering-promote, flash-io, loglevel), each parsed case-insensitively and
//! rendered in lower case.

use std::path::PathBuf;
use std::str::FromStr;

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
    /// `CONFIG SET` of a protected option (`enable-protected-configs`).
    #[error("can't set protected config '{0}'")]
    Protected(String),
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
            ConfigError::Protected(name) => format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - can't set protected config"
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

/// What happens when `maxmemory` is reached: Redis's eight policies
/// (`strata_engine::EvictionPolicy` says how each picks its victims).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MaxmemoryPolicy {
    /// `noeviction`: refuse writes that need memory.
    NoEviction,
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
}

impl MaxmemoryPolicy {
    /// Every policy, in the order Redis's error message names them.
    const ALL: [MaxmemoryPolicy; 8] = [
        MaxmemoryPolicy::VolatileLru,
        MaxmemoryPolicy::VolatileLfu,
        MaxmemoryPolicy::VolatileRandom,
        MaxmemoryPolicy::VolatileTtl,
        MaxmemoryPolicy::AllkeysLru,
        MaxmemoryPolicy::AllkeysLfu,
        MaxmemoryPolicy::AllkeysRandom,
        MaxmemoryPolicy::NoEviction,
    ];

    /// The Redis name of the policy.
    pub fn as_str(&self) -> &'static str {
        match self {
            MaxmemoryPolicy::NoEviction => "noeviction",
            MaxmemoryPolicy::AllkeysLru => "allkeys-lru",
            MaxmemoryPolicy::AllkeysLfu => "allkeys-lfu",
            MaxmemoryPolicy::AllkeysRandom => "allkeys-random",
            MaxmemoryPolicy::VolatileLru => "volatile-lru",
            MaxmemoryPolicy::VolatileLfu => "volatile-lfu",
            MaxmemoryPolicy::VolatileRandom => "volatile-random",
            MaxmemoryPolicy::VolatileTtl => "volatile-ttl",
        }
    }

    /// An LFU policy: OBJECT FREQ answers, OBJECT IDLETIME refuses.
    pub fn lfu(&self) -> bool {
        matches!(
            self,
            MaxmemoryPolicy::AllkeysLfu | MaxmemoryPolicy::VolatileLfu
        )
    }

    /// An LRU or LFU policy (Redis then keeps no shared integer objects:
    /// OBJECT REFCOUNT).
    pub fn tracks_access(&self) -> bool {
        matches!(
            self,
            MaxmemoryPolicy::AllkeysLru
                | MaxmemoryPolicy::AllkeysLfu
                | MaxmemoryPolicy::VolatileLru
                | MaxmemoryPolicy::VolatileLfu
        )
    }
}

impl FromStr for MaxmemoryPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        MaxmemoryPolicy::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = MaxmemoryPolicy::ALL.iter().map(|p| p.as_str()).collect();
                // Redis's words for a bad enum value.
                format!(
                    "argument(s) must be one of the following: {}",
                    names.join(", ")
                )
            })
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

/// `maxmemory-clients`: bytes, or a percentage of `maxmemory-ram`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientsLimit {
    Bytes(u64),
    Percent(u64),
}

impl ClientsLimit {
    /// The limit in bytes (0 = none) for a RAM budget of `ram` bytes.
    pub fn bytes(self, ram: u64) -> u64 {
        match self {
            ClientsLimit::Bytes(b) => b,
            ClientsLimit::Percent(p) => ram / 100 * p,
        }
    }
}

// ---------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------

/// `tls-auth-clients`: whether a TLS client must show a certificate the
/// CA files vouch for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsAuthClients {
    /// Required (Redis's default).
    Yes,
    No,
    /// Checked when shown, not required.
    Optional,
}

impl TlsAuthClients {
    pub fn parse(v: &str) -> Result<TlsAuthClients, String> {
        match v.to_ascii_lowercase().as_str() {
            "yes" => Ok(TlsAuthClients::Yes),
            "no" => Ok(TlsAuthClients::No),
            "optional" => Ok(TlsAuthClients::Optional),
            _ => Err("argument(s) must be one of the following: no, yes, optional".into()),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TlsAuthClients::Yes => "yes",
            TlsAuthClients::No => "no",
            TlsAuthClients::Optional => "optional",
        }
    }
}

/// The TLS options Redis 7.0 has for its server side (`tls-*`), as given:
/// `net::tls` builds rustls's configuration from them (at start, and again
/// whenever CONFIG SET changes one; a configuration that does not build is
/// refused and the old one kept).
#[derive(Clone, Debug, PartialEq)]
pub struct TlsConfig {
    pub cert_file: String,
    pub key_file: String,
    pub key_file_pass: String,
    pub ca_cert_file: String,
    pub ca_cert_dir: String,
    pub auth_clients: TlsAuthClients,
    /// `tls-protocols`: "" (TLSv1.2 and TLSv1.3) or names, space-separated.
    pub protocols: String,
    /// `tls-ciphers` (TLSv1.2) and `tls-ciphersuites` (TLSv1.3): "" (all
    /// rustls offers) or names, colon-separated.
    pub ciphers: String,
    pub ciphersuites: String,
    pub prefer_server_ciphers: bool,
    pub session_caching: bool,
    pub session_cache_size: u64,
}

impl Default for TlsConfig {
    fn default() -> TlsConfig {
        TlsConfig {
            cert_file: String::new(),
            key_file: String::new(),
            key_file_pass: String::new(),
            ca_cert_file: String::new(),
            ca_cert_dir: String::new(),
            auth_clients: TlsAuthClients::Yes,
            protocols: String::new(),
            ciphers: String::new(),
            ciphersuites: String::new(),
            prefer_server_ciphers: false,
            session_caching: true,
            session_cache_size: 20480,
        }
    }
}

/// Whether a client may do what an `enable-*` setting guards (Redis's
/// `allowProtectedAction`): "yes", or "local" from a loopback address.
pub fn allows(setting: &str, local: bool) -> bool {
    setting == "yes" || (setting == "local" && local)
}
