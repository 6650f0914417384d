//! Strata's tiering counters: reads `INFO tiered` before and after a run
//! over a separate connection and turns the difference into the run's RAM
//! hit ratio, flash reads/s and flash bytes written/s. A server whose reply
//! lacks the `tiered_*` fields (plain Redis, memcached) yields `None` and
//! nothing is reported.

use std::collections::HashMap;
use std::time::Duration;

use bytes::BytesMut;
use serde::Serialize;
use strata_protocol::{parse_frame, write_request, Frame, Limits, Parsed};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Numeric `field:value` pairs of an INFO reply.
pub type InfoFields = HashMap<String, f64>;

/// Parses an INFO body (`# Section` headers, `field:value` lines), keeping
/// numeric values.
pub fn parse_info(body: &str) -> InfoFields {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            Some((k.to_string(), v.parse::<f64>().ok()?))
        })
        .collect()
}

/// Sends `INFO tiered` to `server:port` and returns its fields, or `None` if
/// the server cannot be asked or is not Strata (no `tiered_ram_hits`).
pub async fn fetch_tiered(server: &str, port: u16) -> Option<InfoFields> {
    let fut = async {
        let mut s = TcpStream::connect((server, port)).await.ok()?;
        let mut out = BytesMut::new();
        write_request(&mut out, &[b"INFO", b"tiered"]);
        s.write_all(&out).await.ok()?;
        let mut buf = BytesMut::with_capacity(4096);
        let limits = Limits::default();
        loop {
            if let Parsed::Complete { value, .. } = parse_frame(&buf, &limits).ok()? {
                let body = match value {
                    Frame::Bulk(b) => b,
                    Frame::Verbatim { data, .. } => data,
                    _ => return None,
                };
                let fields = parse_info(&String::from_utf8_lossy(&body));
                return fields.contains_key("tiered_ram_hits").then_some(fields);
            }
            if s.read_buf(&mut buf).await.ok()? == 0 {
                return None;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), fut)
        .await
        .ok()
        .flatten()
}

/// The run's tiering figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TieredReport {
    /// Δtiered_ram_hits / Δ(tiered_ram_hits + tiered_ram_misses); None if
    /// no lookups were counted.
    pub ram_hit_ratio: Option<f64>,
    /// Δtiered_total_fetches / duration.
    pub flash_reads_per_sec: f64,
    /// Δflash_bytes_written / duration.
    pub flash_bytes_written_per_sec: f64,
    /// Δtiered_ram_hits.
    pub ram_hits: u64,
    /// Δtiered_ram_misses.
    pub ram_misses: u64,
    /// Δtiered_total_fetches.
    pub flash_reads: u64,
    /// Δflash_bytes_written.
    pub flash_bytes_written: u64,
    /// Seconds the deltas cover.
    pub duration_secs: f64,
}

impl TieredReport {
    /// Figures from counters read before and after a run of `duration`.
    pub fn from_delta(before: &InfoFields, after: &InfoFields, duration: Duration) -> TieredReport {
        let d = |k: &str| {
            let a = after.get(k).copied().unwrap_or(0.0);
            let b = before.get(k).copied().unwrap_or(0.0);
            (a - b).max(0.0) as u64
        };
        TieredReport::from_counts(
            d("tiered_ram_hits"),
            d("tiered_ram_misses"),
            d("tiered_total_fetches"),
            d("flash_bytes_written"),
            duration.as_secs_f64(),
        )
    }

    fn from_counts(hits: u64, misses: u64, reads: u64, written: u64, secs: f64) -> TieredReport {
        let per = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        TieredReport {
            ram_hit_ratio: (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64),
            flash_reads_per_sec: per(reads),
            flash_bytes_written_per_sec: per(written),
            ram_hits: hits,
            ram_misses: misses,
            flash_reads: reads,
            flash_bytes_written: written,
            duration_secs: secs,
        }
    }

    /// Several runs' reports combined (counts summed, rates over the summed
    /// duration).
    pub fn combine(reports: &[&TieredReport]) -> Option<TieredReport> {
        if reports.is_empty() {
            return None;
        }
        let sum = |f: fn(&TieredReport) -> u64| reports.iter().map(|r| f(r)).sum::<u64>();
        Some(TieredReport::from_counts(
            sum(|r| r.ram_hits),
            sum(|r| r.ram_misses),
            sum(|r| r.flash_reads),
            sum(|r| r.flash_bytes_written),
            reports.iter().map(|r| r.duration_secs).sum(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas() {
        let before = parse_info(
            "# Tiered\r\ntiered_ram_hits:100\r\ntiered_ram_misses:50\r\ntiered_total_fetches:50\r\nflash_bytes_written:1000\r\nram_hit_ratio:0.6667\r\n",
        );
        let after = parse_info(
            "# Tiered\r\ntiered_ram_hits:400\r\ntiered_ram_misses:150\r\ntiered_total_fetches:250\r\nflash_bytes_written:5000\r\n",
        );
        assert_eq!(before.get("ram_hit_ratio"), Some(&0.6667));
        let t = TieredReport::from_delta(&before, &after, Duration::from_secs(2));
        assert_eq!(t.ram_hit_ratio, Some(0.75));
        assert_eq!(t.flash_reads_per_sec, 100.0);
        assert_eq!(t.flash_bytes_written_per_sec, 2000.0);
        let both = TieredReport::combine(&[&t, &t]).unwrap();
        assert_eq!(both.ram_hits, 600);
        assert_eq!(both.flash_reads_per_sec, 100.0);
        let none = TieredReport::from_delta(&before, &before, Duration::from_secs(1));
        assert_eq!(none.ram_hit_ratio, None);
    }
}
