//! Strata's one configuration type, [`Config`], and everything that turns raw
//! input (a redis.conf-style file, `--name value` command-line options,
//! `CONFIG SET`) into it.
//!
//! What this module owns:
//!
//! * the option table ([`options()`]): exactly one [`OptionDef`] per option,
//!   giving its name, default (as text), one-line doc, whether `CONFIG SET`
//!   may change it at runtime, and how to parse and render it. The table is
//!   the single source for `--help` ([`help_text`]), `CONFIG GET`
//!   ([`Config::get_matching`]), `CONFIG SET` ([`Config::set`]) and file and
//!   command-line parsing. No option is listed anywhere else.
//! * the defaults, as named `DEFAULT_*` constants;
//! * the redis.conf lexer (Redis's `sdssplitargs` rules for quotes and
//!   escapes) and size parser ([`parse_size`], Redis's `memtoll` rules).
//!
//! Rooms: this file holds the defaults, [`Config`] and the option
//! machinery; `values` the errors and enumerated values; `options` the
//! option table (one declarative entry per option: it is long, and stays
//! one table); `parse` `--help`, the size and value parsers and the
//! redis.conf lexer; `tests` the tests.
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
use std::sync::OnceLock;

use crate::base::glob::glob_match;

mod defaults;
pub mod events;
mod options;
mod parse;
#[cfg(test)]
mod tests;
mod values;

pub use defaults::*;
use options::OPTIONS;
use parse::*;
pub use parse::{help_text, parse_addr, parse_size};
pub use values::*;

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
    /// Addresses to listen on (`bind a b c` takes several; `-addr`: skipped
    /// where it does not exist; `*` any IPv4, `::*` any IPv6). Default:
    /// `127.0.0.1 -::1`.
    pub bind: Vec<String>,
    /// `protected-mode`: while the default user has no password, only
    /// loopback clients may connect (others get `-DENIED`). Default: yes.
    pub protected_mode: bool,
    /// The listen backlog (`tcp-backlog`, capped by the kernel's
    /// `net.core.somaxconn`). Default: 511.
    pub tcp_backlog: u32,
    /// `memcached-allow-unauthenticated`: serve the memcached port while
    /// the RESP side needs a password (memcached's text protocol has no
    /// authentication: it would bypass the password). Default: no.
    pub memcached_allow_unauthenticated: bool,
    /// TCP port of the Memcached protocol (same `bind`, database 0); 0 =
    /// off. Default: 11211.
    pub memcached_port: u16,
    /// `tls-port`: TCP port of the RESP protocol over TLS (same `bind`);
    /// 0 = off. Default: 0.
    pub tls_port: u16,
    /// `memcached-tls`: the memcached port speaks TLS (memcached's `-Z`).
    pub memcached_tls: bool,
    /// The `tls-*` certificates and choices.
    pub tls: TlsConfig,
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
    /// Keys sampled per eviction (the engine uses at most 64). Default: 5.
    pub maxmemory_samples: u32,
    /// `maxmemory-clients`: RAM all clients' buffers may hold before the
    /// largest are closed (Redis 7's client eviction): bytes, or a
    /// percentage of `maxmemory-ram`; 0 = no limit. Default: 0.
    pub maxmemory_clients: ClientsLimit,
    /// The LFU policies' counter: how slowly it rises. Default: 10.
    pub lfu_log_factor: u32,
    /// Minutes per step the LFU counter falls while a key is idle; 0 =
    /// never. Default: 1.
    pub lfu_decay_time: u32,
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
    pub flash_gc_garbage_ratio: u64,
    /// Microseconds a loop with flash reads in flight waits for them on
    /// the CPU before it sleeps (`flash-poll-us`). Default: 50.
    pub flash_poll_us: u64,
    /// Active defragmentation of hot values (`activedefrag`).
    pub activedefrag: bool,
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
    /// Entries kept in the ACL LOG. Default: 128.
    pub acllog_max_len: u64,
    /// Writes need this many good replicas (`min-replicas-to-write`):
    /// there are none here, so any value above 0 refuses writes with
    /// NOREPLICAS, as Redis does without replicas. Default: 0.
    pub min_replicas_to_write: u64,
    /// Seconds of lag a good replica may have. Default: 10.
    pub min_replicas_max_lag: u64,
    /// ACL users the configuration file defines (`user <name> <rules>...`
    /// lines), each the name and its rules. Default: none.
    pub users: Vec<Vec<String>>,
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
    /// bytes, soft bytes, soft seconds (0 = none): a client whose waiting
    /// replies (or a subscriber's queued messages) pass them is closed.
    /// Default: Redis's.
    pub client_output_buffer_limit: [[u64; 3]; 3],
    /// Bytes of unparsed input a client may hold before it is closed
    /// (`client-query-buffer-limit`). Default: 1gb.
    pub client_query_buffer_limit: u64,
    /// `enable-debug-command`: "no", "yes" or "local" (loopback clients).
    pub enable_debug_command: String,
    /// `enable-protected-configs`: who may CONFIG SET a protected option
    /// (`dir`): "no", "yes" or "local". Default: no.
    pub enable_protected_configs: String,
    /// `enable-module-command`: accepted as Redis's ("no", "yes",
    /// "local"); Strata loads no modules. Default: no.
    pub enable_module_command: String,
    /// `aclfile`: where ACL LOAD / ACL SAVE read and write the users; ""
    /// = none (users come from `user` lines). Default: "".
    pub aclfile: String,
    /// `rename-command <name> <new name>` lines: each command renamed, or
    /// removed when the new name is empty. Default: none.
    pub renames: Vec<(String, String)>,
    /// `server-runtime`: "per-core" (an event loop per thread, `net::loops`) or
    /// "shared" (one work-stealing runtime for every connection).
    pub server_runtime: String,
    /// `loop-scaling`: auto or off (`net::loops`).
    pub loop_scaling: String,
    /// `tracking-table-max-keys`: keys client tracking remembers, at most.
    pub tracking_table_max_keys: u64,
    /// `notify-keyspace-events`, as `services::notify` flags.
    pub notify_keyspace_events: u32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            port: DEFAULT_PORT,
            memcached_port: 11211,
            tls_port: 0,
            memcached_tls: false,
            tls: TlsConfig::default(),
            memcached_max_item_size: 1 << 20,
            protected_mode: true,
            tcp_backlog: 511,
            memcached_allow_unauthenticated: false,
            bind: DEFAULT_BIND.iter().map(|a| a.to_string()).collect(),
            dir: PathBuf::from(DEFAULT_DIR),
            databases: DEFAULT_DATABASES,
            maxmemory: DEFAULT_MAXMEMORY,
            maxmemory_ram: percent_of_ram(DEFAULT_MAXMEMORY_RAM_PERCENT),
            maxmemory_policy: DEFAULT_MAXMEMORY_POLICY,
            maxmemory_samples: 5,
            maxmemory_clients: ClientsLimit::Bytes(0),
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            flash_dir: None,
            flash_max_size: DEFAULT_FLASH_MAX_SIZE,
            flash_segment_size: DEFAULT_FLASH_SEGMENT_SIZE,
            flash_io: DEFAULT_FLASH_IO,
            flash_direct_io: DEFAULT_FLASH_DIRECT_IO,
            tiering_min_value_size: DEFAULT_TIERING_MIN_VALUE_SIZE,
            flash_gc_garbage_ratio: DEFAULT_FLASH_GC_GARBAGE_RATIO,
            flash_poll_us: strata_engine::flash::io::DEFAULT_POLL_US,
            activedefrag: true,
            tiering_promote: DEFAULT_TIERING_PROMOTE,
            threads: cpu_count(),
            proto_max_bulk_len: DEFAULT_PROTO_MAX_BULK_LEN,
            maxclients: DEFAULT_MAXCLIENTS,
            timeout: DEFAULT_TIMEOUT,
            hz: DEFAULT_HZ,
            slowlog_log_slower_than: DEFAULT_SLOWLOG_LOG_SLOWER_THAN,
            latency_monitor_threshold: 0,
            slowlog_max_len: DEFAULT_SLOWLOG_MAX_LEN,
            acllog_max_len: 128,
            min_replicas_to_write: 0,
            min_replicas_max_lag: 10,
            users: Vec::new(),
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
            enable_protected_configs: "no".into(),
            enable_module_command: "no".into(),
            aclfile: String::new(),
            renames: Vec::new(),
            client_query_buffer_limit: 1 << 30,
            server_runtime: "per-core".into(),
            loop_scaling: "auto".into(),
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
            // `user <name> <rules>...`: an ACL user (not a CONFIG option).
            if d.name == "user" {
                crate::services::acl::check_user_line(&d.args)
                    .map_err(|e| d.error(format!("user: {e}")))?;
                if config.users.iter().any(|u| u.first() == d.args.first()) {
                    return Err(d.error(
                        "user: Duplicate user found. A user can only be defined once in config files".into(),
                    ));
                }
                config.users.push(d.args.clone());
                continue;
            }
            // `rename-command <name> <new name>`: checked against the
            // command table when the server starts.
            if d.name == "rename-command" {
                let [old, new] = d.args.as_slice() else {
                    return Err(d.error("rename-command: wrong number of arguments".into()));
                };
                config.renames.push((old.clone(), new.clone()));
                continue;
            }
            let def = find_option(&d.name)
                .ok_or_else(|| d.error(format!("unknown option '{}'", d.name)))?;
            def.apply(&mut config, &d.args)
                .map_err(|reason| match d.origin {
                    // A file line may hold any option: say which one failed.
                    Origin::Line(..) => d.error(format!("{}: {reason}", def.name)),
                    // `--name` is already in the message; the value too
                    // unless the reason (Redis's words, for CONFIG SET)
                    // leaves it out.
                    Origin::Arg => {
                        let value = d.args.join(" ");
                        if reason.contains(&value) {
                            d.error(reason)
                        } else {
                            d.error(format!("'{value}': {reason}"))
                        }
                    }
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
        self.set_as(name, value, false)
    }

    /// `set`, by a client that `enable-protected-configs` lets change the
    /// protected options (`protected_ok`) or not.
    pub fn set_as(
        &mut self,
        name: &str,
        value: &str,
        protected_ok: bool,
    ) -> Result<(), ConfigError> {
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
        if PROTECTED.contains(&def.name) && !protected_ok {
            return Err(ConfigError::Protected(def.name.to_string()));
        }
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

/// The options CONFIG SET refuses unless `enable-protected-configs`
/// allows the client (Redis 7.0's PROTECTED_CONFIG ones Strata has: where
/// the files go, the classic way to make a server write a file anywhere).
pub const PROTECTED: &[&str] = &["dir"];

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
#[derive(Debug, Clone)]
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
    &OPTIONS
}

fn find_option(name: &str) -> Option<&'static OptionDef> {
    OPTIONS
        .iter()
        .find(|def| def.name.eq_ignore_ascii_case(name))
}
