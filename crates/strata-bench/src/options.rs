//! Command-line options: memtier_benchmark's names, defaults and meanings
//! (plus Strata's extensions `Z`, `--zipf-s`, `--zipf-beta`, `--rate`,
//! `--verify`), parsed with clap and checked by [`Options::validate`].
//!
//! Owns the option types ([`Protocol`], [`Ratio`], [`KeyPattern`],
//! [`KeyPatterns`], [`Requests`]) and their string forms; nothing here does
//! I/O.

use std::fmt;
use std::str::FromStr;

use clap::{Parser, ValueEnum};
use serde::Serialize;

/// Wire protocol spoken to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// RESP (Redis, Strata, ...).
    Redis,
    /// memcached text protocol (`get` / `set`).
    #[value(name = "memcache_text")]
    MemcacheText,
}

/// `--ratio SET:GET`: out of every `set + get` requests, the first `set` are
/// SETs and the rest GETs (memtier's deterministic interleave).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    /// SETs per cycle.
    pub set: u32,
    /// GETs per cycle.
    pub get: u32,
}

impl FromStr for Ratio {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| format!("ratio must be SET:GET, got {s:?}"))?;
        let set = a
            .trim()
            .parse()
            .map_err(|_| format!("bad SET ratio {a:?}"))?;
        let get = b
            .trim()
            .parse()
            .map_err(|_| format!("bad GET ratio {b:?}"))?;
        if set == 0 && get == 0 {
            return Err("ratio 0:0 sends nothing".into());
        }
        Ok(Ratio { set, get })
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.set, self.get)
    }
}

/// One side of `--key-pattern`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyPattern {
    /// `S`: sequential over the whole range, wrapping.
    Sequential,
    /// `R`: uniform random.
    Random,
    /// `G`: Gaussian around `--key-median` with `--key-stddev`.
    Gaussian,
    /// `P`: each client walks its own slice of the range sequentially.
    Parallel,
    /// `Z`: Zipf-Mandelbrot over ranks, ranks permuted onto keys.
    Zipf,
}

impl KeyPattern {
    fn from_char(c: &str) -> Result<Self, String> {
        Ok(match c.trim() {
            "S" => KeyPattern::Sequential,
            "R" => KeyPattern::Random,
            "G" => KeyPattern::Gaussian,
            "P" => KeyPattern::Parallel,
            "Z" => KeyPattern::Zipf,
            other => return Err(format!("unknown key pattern {other:?} (S, R, G, P or Z)")),
        })
    }

    /// The one-letter name.
    pub fn letter(self) -> char {
        match self {
            KeyPattern::Sequential => 'S',
            KeyPattern::Random => 'R',
            KeyPattern::Gaussian => 'G',
            KeyPattern::Parallel => 'P',
            KeyPattern::Zipf => 'Z',
        }
    }
}

/// `--key-pattern SET:GET`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyPatterns {
    /// Pattern for SET keys.
    pub set: KeyPattern,
    /// Pattern for GET keys.
    pub get: KeyPattern,
}

impl FromStr for KeyPatterns {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| format!("key pattern must be SET:GET, got {s:?}"))?;
        Ok(KeyPatterns {
            set: KeyPattern::from_char(a)?,
            get: KeyPattern::from_char(b)?,
        })
    }
}

impl fmt::Display for KeyPatterns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.set.letter(), self.get.letter())
    }
}

/// `-n`: a request count per client, or `allkeys` (fill the range once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requests {
    /// This many requests per client.
    Count(u64),
    /// Split the key range across all clients; each SETs its share once.
    AllKeys,
}

impl FromStr for Requests {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("allkeys") {
            return Ok(Requests::AllKeys);
        }
        s.parse()
            .map(Requests::Count)
            .map_err(|_| format!("requests must be a number or allkeys, got {s:?}"))
    }
}

impl fmt::Display for Requests {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requests::Count(n) => write!(f, "{n}"),
            Requests::AllKeys => f.write_str("allkeys"),
        }
    }
}

/// Serialises as its command-line string (`"1:10"`, `"R:R"`).
macro_rules! serialize_as_string {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}
serialize_as_string!(Ratio);
serialize_as_string!(KeyPatterns);

impl Serialize for Requests {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Requests::Count(n) => s.serialize_u64(*n),
            Requests::AllKeys => s.serialize_str("allkeys"),
        }
    }
}

/// All options. Field names follow memtier_benchmark's long options.
#[derive(Clone, Debug, Parser, Serialize)]
#[command(
    name = "strata-bench",
    version,
    about = "memtier_benchmark-compatible load generator for Strata, Redis and memcached"
)]
pub struct Options {
    /// Server address.
    #[arg(short = 's', long, default_value = "127.0.0.1")]
    pub server: String,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 6379)]
    pub port: u16,
    /// Protocol: redis or memcache_text.
    #[arg(short = 'P', long, value_enum, default_value = "redis")]
    pub protocol: Protocol,
    /// Number of threads.
    #[arg(short = 't', long, default_value_t = 4)]
    pub threads: usize,
    /// Number of clients (connections) per thread.
    #[arg(short = 'c', long, default_value_t = 50)]
    pub clients: usize,
    /// Requests in flight per connection.
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// Value size in bytes for SET.
    #[arg(short = 'd', long = "data-size", default_value_t = 32)]
    pub data_size: usize,
    /// SET:GET ratio.
    #[arg(long, default_value = "1:10")]
    pub ratio: Ratio,
    /// SET:GET key patterns, each one of S, R, G, P, Z.
    #[arg(long = "key-pattern", default_value = "R:R")]
    pub key_pattern: KeyPatterns,
    /// Smallest key number.
    #[arg(long = "key-minimum", default_value_t = 0)]
    pub key_minimum: u64,
    /// Largest key number (inclusive).
    #[arg(long = "key-maximum", default_value_t = 10_000_000)]
    pub key_maximum: u64,
    /// Key name prefix.
    #[arg(long = "key-prefix", default_value = "memtier-")]
    pub key_prefix: String,
    /// G pattern: median key (default: middle of the range).
    #[arg(long = "key-median")]
    pub key_median: Option<f64>,
    /// G pattern: standard deviation (default: range / 6).
    #[arg(long = "key-stddev")]
    pub key_stddev: Option<f64>,
    /// Z pattern: exponent s of P(k) ∝ 1/(k+beta)^s.
    #[arg(long = "zipf-s", default_value_t = 0.99)]
    pub zipf_s: f64,
    /// Z pattern: Mandelbrot shift beta of P(k) ∝ 1/(k+beta)^s.
    #[arg(long = "zipf-beta", default_value_t = 0.0)]
    pub zipf_beta: f64,
    /// Requests per client, or `allkeys`.
    #[arg(short = 'n', long, default_value = "10000")]
    pub requests: Requests,
    /// Run for this many seconds (overrides --requests).
    #[arg(long = "test-time")]
    pub test_time: Option<u64>,
    /// Seed each client's random generator differently.
    #[arg(long = "distinct-client-seed")]
    pub distinct_client_seed: bool,
    /// Use a random seed instead of the fixed default.
    #[arg(long)]
    pub randomize: bool,
    /// Number of full runs.
    #[arg(short = 'x', long = "run-count", default_value_t = 1)]
    pub run_count: u32,
    /// Do not print the latency distribution.
    #[arg(long = "hide-histogram")]
    pub hide_histogram: bool,
    /// Write a JSON report to this file.
    #[arg(long = "json-out-file")]
    pub json_out_file: Option<String>,
    /// Write the text report to this file instead of stdout.
    #[arg(short = 'o', long = "out-file")]
    pub out_file: Option<String>,
    /// Open loop: total requests per second across all clients (latency
    /// measured from the intended send time).
    #[arg(long)]
    pub rate: Option<f64>,
    /// SET key-derived values and check every GET hit against them.
    #[arg(long)]
    pub verify: bool,
    /// Strata's RESP port, to read `INFO tiered` from when the load goes
    /// over another protocol (e.g. `-P memcache_text` to its memcached port).
    #[arg(long = "info-port")]
    pub info_port: Option<u16>,
}

impl Options {
    /// Parses a command line (first item is the program name).
    pub fn parse_from_args<I, T>(args: I) -> Result<Options, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        Options::try_parse_from(args)
    }

    /// Checks cross-field constraints clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.threads == 0 || self.clients == 0 {
            return Err("--threads and --clients must be at least 1".into());
        }
        if self.pipeline == 0 {
            return Err("--pipeline must be at least 1".into());
        }
        if self.run_count == 0 {
            return Err("--run-count must be at least 1".into());
        }
        if self.key_maximum < self.key_minimum {
            return Err("--key-maximum must be >= --key-minimum".into());
        }
        if self.requests == Requests::AllKeys
            && self.test_time.is_none()
            && self.key_count() < self.total_clients() as u64
        {
            return Err("allkeys needs at least one key per client".into());
        }
        if let Some(sd) = self.key_stddev {
            if !(sd.is_finite() && sd > 0.0) {
                return Err("--key-stddev must be > 0".into());
            }
        }
        if let Some(m) = self.key_median {
            if !m.is_finite() {
                return Err("--key-median must be a number".into());
            }
        }
        if !(self.zipf_s.is_finite() && self.zipf_s >= 0.0) {
            return Err("--zipf-s must be >= 0".into());
        }
        if !(self.zipf_beta.is_finite() && self.zipf_beta >= 0.0) {
            return Err("--zipf-beta must be >= 0".into());
        }
        if let Some(r) = self.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err("--rate must be > 0".into());
            }
        }
        if self.test_time == Some(0) {
            return Err("--test-time must be at least 1".into());
        }
        Ok(())
    }

    /// Connections across all threads.
    pub fn total_clients(&self) -> usize {
        self.threads * self.clients
    }

    /// Keys in `[key_minimum, key_maximum]`.
    pub fn key_count(&self) -> u64 {
        self.key_maximum - self.key_minimum + 1
    }

    /// Gaussian median (default: middle of the range).
    pub fn median(&self) -> f64 {
        self.key_median
            .unwrap_or((self.key_minimum as f64 + self.key_maximum as f64) / 2.0)
    }

    /// Gaussian standard deviation (default: range / 6).
    pub fn stddev(&self) -> f64 {
        self.key_stddev
            .unwrap_or(((self.key_maximum - self.key_minimum) as f64 / 6.0).max(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Options {
        let o = Options::parse_from_args(line.split_whitespace()).unwrap();
        o.validate().unwrap();
        o
    }

    #[test]
    fn defaults_are_memtiers() {
        let o = parse("strata-bench");
        assert_eq!(o.server, "127.0.0.1");
        assert_eq!(o.port, 6379);
        assert_eq!(o.protocol, Protocol::Redis);
        assert_eq!(
            (o.threads, o.clients, o.pipeline, o.data_size),
            (4, 50, 1, 32)
        );
        assert_eq!(o.ratio, Ratio { set: 1, get: 10 });
        assert_eq!(o.key_pattern.to_string(), "R:R");
        assert_eq!((o.key_minimum, o.key_maximum), (0, 10_000_000));
        assert_eq!(o.key_prefix, "memtier-");
        assert_eq!(o.requests, Requests::Count(10_000));
        assert_eq!(o.run_count, 1);
        assert_eq!((o.zipf_s, o.zipf_beta), (0.99, 0.0));
        assert_eq!(o.median(), 5_000_000.0);
        assert!((o.stddev() - 10_000_000.0 / 6.0).abs() < 1e-6);
        assert!(!o.verify && o.rate.is_none() && o.test_time.is_none());
    }

    #[test]
    fn seed_command_line() {
        let o = parse(
            "memtier_benchmark -s 127.0.0.1 -p 6379 -t 4 -c 50 --pipeline 1 -d 512 --ratio 1:1 \
             --key-pattern G:G --key-minimum 1 --key-maximum 8000000 --key-stddev 1000000 \
             -n 100000 --hide-histogram",
        );
        assert_eq!(o.server, "127.0.0.1");
        assert_eq!(o.port, 6379);
        assert_eq!(
            (o.threads, o.clients, o.pipeline, o.data_size),
            (4, 50, 1, 512)
        );
        assert_eq!(o.ratio, Ratio { set: 1, get: 1 });
        assert_eq!(
            o.key_pattern,
            KeyPatterns {
                set: KeyPattern::Gaussian,
                get: KeyPattern::Gaussian
            }
        );
        assert_eq!((o.key_minimum, o.key_maximum), (1, 8_000_000));
        assert_eq!(o.key_stddev, Some(1_000_000.0));
        assert_eq!(o.median(), 4_000_000.5);
        assert_eq!(o.requests, Requests::Count(100_000));
        assert!(o.hide_histogram);
        assert_eq!(o.total_clients(), 200);
    }

    #[test]
    fn long_forms_and_extensions() {
        let o = parse(
            "x --server=h --port=7000 --protocol=memcache_text --threads=1 --clients=2 \
             --data-size=10 --requests=allkeys --key-maximum=99 --key-pattern=P:Z \
             --zipf-s=1.2 --zipf-beta=2.5 --rate=1000 --verify --test-time=3 \
             --run-count=2 --randomize --distinct-client-seed --json-out-file=a.json \
             --out-file=b.txt --key-prefix=k: --key-median=10",
        );
        assert_eq!(o.protocol, Protocol::MemcacheText);
        assert_eq!(o.requests, Requests::AllKeys);
        assert_eq!(o.key_pattern.to_string(), "P:Z");
        assert_eq!((o.zipf_s, o.zipf_beta), (1.2, 2.5));
        assert_eq!(o.rate, Some(1000.0));
        assert_eq!(o.test_time, Some(3));
        assert_eq!(o.run_count, 2);
        assert!(o.verify && o.randomize && o.distinct_client_seed);
        assert_eq!(o.json_out_file.as_deref(), Some("a.json"));
        assert_eq!(o.out_file.as_deref(), Some("b.txt"));
        assert_eq!(o.key_prefix, "k:");
        assert_eq!(o.median(), 10.0);
    }

    #[test]
    fn rejects_bad_values() {
        for bad in [
            "x --ratio 0:0",
            "x --ratio 1",
            "x --key-pattern Q:R",
            "x -n lots",
            "x -P http",
        ] {
            assert!(
                Options::parse_from_args(bad.split_whitespace()).is_err(),
                "{bad}"
            );
        }
        for bad in [
            "x --key-minimum 5 --key-maximum 4",
            "x --pipeline 0",
            "x --zipf-s=-1",
            "x --key-stddev 0",
            "x -n allkeys --key-maximum 3",
        ] {
            let o = Options::parse_from_args(bad.split_whitespace()).unwrap();
            assert!(o.validate().is_err(), "{bad}");
        }
    }
}
