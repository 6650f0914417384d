//! The seeded random command mix of the differential test, and how each
//! command's reply is compared.

use super::oracle::{sorted_elements, sorted_pairs, Reply};
use rand::rngs::StdRng;
use rand::Rng;
use strata_protocol::Frame;

mod streams;
mod strings;

/// How the replies of a command are compared.
pub enum Check {
    /// Byte for byte.
    Exact,
    /// As multisets of elements (Redis promises no order).
    Unordered,
    /// As sets of field/value pairs (HGETALL and friends).
    Pairs,
    /// A random pick: same shape and count; then `key` is made the same on
    /// both servers again.
    Random { key: Vec<u8> },
    /// A SCAN-family command: the whole iteration is compared afterwards.
    ScanAll,
    /// DUMP: the payloads differ by design (Strata writes plain
    /// encodings); each server's payload is RESTOREd into the other and
    /// the restored values compared.
    DumpCross { key: Vec<u8> },
    /// Equal once `mask` has blanked what depends on the clock (idle and
    /// delivery times) in both.
    Masked(fn(&mut Frame)),
}

impl Check {
    pub fn is_random(&self) -> bool {
        matches!(
            self,
            Check::Random { .. } | Check::ScanAll | Check::DumpCross { .. }
        )
    }

    pub fn compare(&self, a: &Reply, b: &Reply) -> Result<(), String> {
        if a.bytes == b.bytes {
            return Ok(());
        }
        let ok = match self {
            Check::Exact => false,
            Check::Unordered => {
                sorted_elements(&a.frame).is_some()
                    && sorted_elements(&a.frame) == sorted_elements(&b.frame)
            }
            Check::Pairs => {
                sorted_pairs(&a.frame).is_some() && sorted_pairs(&a.frame) == sorted_pairs(&b.frame)
            }
            Check::Random { .. } => match (&a.frame, &b.frame) {
                (Frame::Array(x), Frame::Array(y)) | (Frame::Set(x), Frame::Set(y)) => {
                    x.len() == y.len()
                }
                (Frame::Bulk(_), Frame::Bulk(_)) => true,
                _ => false,
            },
            Check::DumpCross { .. } => {
                matches!((&a.frame, &b.frame), (Frame::Bulk(_), Frame::Bulk(_)))
            }
            Check::Masked(mask) => {
                let (mut x, mut y) = (a.frame.clone(), b.frame.clone());
                mask(&mut x);
                mask(&mut y);
                x == y
            }
            Check::ScanAll => {
                matches!((&a.frame, &b.frame), (Frame::Array(x), Frame::Array(y)) if x.len() == 2 && y.len() == 2)
            }
        };
        if ok {
            Ok(())
        } else {
            Err("replies differ".into())
        }
    }
}

/// Compares EXEC replies: byte for byte, or element by element, each by
/// the check of the command it answers.
pub fn compare_exec(batch: &[Cmd], a: &Reply, b: &Reply) -> Result<(), String> {
    if a.bytes == b.bytes {
        return Ok(());
    }
    let (Frame::Array(x), Frame::Array(y)) = (&a.frame, &b.frame) else {
        return Err("replies differ".into());
    };
    if x.len() != batch.len() || y.len() != batch.len() {
        return Err("EXEC replies of different lengths".into());
    }
    for (i, ((fa, fb), (args, check))) in x.iter().zip(y).zip(batch).enumerate() {
        let as_reply = |f: &Frame| Reply {
            bytes: format!("{f:?}").into_bytes(),
            frame: f.clone(),
        };
        check
            .compare(&as_reply(fa), &as_reply(fb))
            .map_err(|why| format!("reply {i} ({}): {why}", show(args)))?;
    }
    Ok(())
}

/// Shows a command for failure messages.
pub fn show(args: &[Vec<u8>]) -> String {
    args.iter()
        .map(|a| {
            let s = String::from_utf8_lossy(a);
            if s.len() > 40 {
                format!(
                    "{}…({}B)",
                    &s[..s.char_indices().nth(20).map(|c| c.0).unwrap_or(0)],
                    a.len()
                )
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

const KEYS_PER_KIND: usize = 8;

pub struct Gen {
    pub(super) rng: StdRng,
    /// The millisecond part of new ids, per stream key.
    xms: [u64; KEYS_PER_KIND],
}

pub type Cmd = (Vec<Vec<u8>>, Check);

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

impl Gen {
    pub fn new(rng: StdRng) -> Gen {
        Gen {
            rng,
            xms: [1; KEYS_PER_KIND],
        }
    }

    /// Large strings that fill the RAM budget, so collections get demoted;
    /// and one big hash, set, list and sorted set in the mix's key pools (chunked on
    /// Strata: past 32 KiB packed), which the random commands then use.
    pub fn ballast(&mut self) -> Vec<Cmd> {
        let mut v: Vec<Cmd> = (0..120)
            .map(|i| {
                let v: Vec<u8> = (0..80_000).map(|j| b'a' + ((i + j) % 26) as u8).collect();
                (vec![b("SET"), b(&format!("ballast:{i}")), v], Check::Exact)
            })
            .collect();
        for part in 0..4 {
            let mut h = vec![b("HSET"), b("h:0")];
            let mut s = vec![b("SADD"), b("s:0")];
            let mut l = vec![b("RPUSH"), b("l:0")];
            let mut z = vec![b("ZADD"), b("z:0")];
            for i in part * 1000..(part + 1) * 1000 {
                h.push(b(&format!("fill:{i}")));
                h.push(b(&format!("{i:0>40}")));
                s.push(b(&format!("fill:{i}")));
                l.push(b(&format!("{i:0>40}")));
                // Few distinct scores: members order ties.
                z.push(b(&format!("{}", (i * 7) % 50 - 10)));
                z.push(b(&format!("fill:{i}")));
            }
            v.push((h, Check::Exact));
            v.push((s, Check::Exact));
            v.push((l, Check::Exact));
            v.push((z, Check::Exact));
        }
        v
    }

    /// Every key the mix may have touched.
    pub fn all_keys(&self) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        for p in ["h", "l", "s", "z", "zl", "g", "str", "bm", "hll", "x"] {
            for i in 0..KEYS_PER_KIND {
                v.push(b(&format!("{p}:{i}")));
            }
        }
        v
    }

    pub(super) fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.rng.gen_range(0..xs.len())].clone()
    }

    pub(super) fn chance(&mut self, p: f64) -> bool {
        self.rng.gen_bool(p)
    }

    /// A key of `prefix`'s pool, sometimes one of another type.
    pub(super) fn key(&mut self, prefix: &str) -> Vec<u8> {
        let p = if self.chance(0.04) {
            self.pick(&["h", "l", "s", "z", "str"])
        } else {
            prefix
        };
        b(&format!("{p}:{}", self.rng.gen_range(0..KEYS_PER_KIND)))
    }

    fn member(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=59 => b(&format!("m{}", self.rng.gen_range(0..60))),
            60..=89 => b(&format!("{}", self.rng.gen_range(-20..300))),
            90..=97 => b(&format!("long-member-{:0>70}", self.rng.gen_range(0..30))),
            _ => b(""),
        }
    }

    fn value(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=59 => b(&format!("v{}", self.rng.gen_range(0..1000))),
            60..=74 => b(&format!("{}", self.rng.gen_range(-1000..1000))),
            75..=97 => {
                let n = self.rng.gen_range(65..700);
                let c = self.rng.gen_range(b'a'..=b'z');
                vec![c; n]
            }
            _ => b(""),
        }
    }

    pub(super) fn int(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=84 => b(&format!("{}", self.rng.gen_range(-12i64..14))),
            85..=89 => b("9223372036854775807"),
            90..=93 => b("-9223372036854775808"),
            94..=96 => b("1.5"),
            _ => b("x"),
        }
    }

    pub(super) fn count(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=79 => b(&format!("{}", self.rng.gen_range(0..12))),
            80..=89 => b(&format!("{}", self.rng.gen_range(-8..0))),
            90..=95 => b("1000"),
            _ => b(self.pick(&["x", "-0", "1.0", ""])),
        }
    }

    fn score(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=54 => b(&format!("{}", self.rng.gen_range(-10..30))),
            55..=74 => b(self.pick(&[
                "1.5",
                "-2.25",
                "0.1",
                "3.3333333333333335",
                "1e3",
                "-0",
                "0.000001",
            ])),
            75..=84 => b(&format!("{}", self.rng.gen_range(-1e6f64..1e6))),
            85..=92 => b(self.pick(&["inf", "-inf", "+inf", "-INF"])),
            _ => b(self.pick(&["nan", "abc", "", "1x"])),
        }
    }

    fn score_bound(&mut self) -> Vec<u8> {
        let s = b(&format!("{}", self.rng.gen_range(-10..30)));
        match self.rng.gen_range(0..10) {
            0..=4 => s,
            5..=6 => [b"(".to_vec(), s].concat(),
            7 => b(self.pick(&["-inf", "+inf", "(-inf", "(+inf"])),
            8 => b(self.pick(&["1.5", "(2.5", "-0.5"])),
            _ => b(self.pick(&["x", "[1", "((1", ""])),
        }
    }

    fn lex_bound(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..10) {
            0..=3 => [b"[".to_vec(), self.member()].concat(),
            4..=6 => [b"(".to_vec(), self.member()].concat(),
            7 => b("-"),
            8 => b("+"),
            _ => b(self.pick(&["m1", "", "[", "(("])),
        }
    }

    pub(super) fn index(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..20) {
            0 => b("x"),
            1 => b("1000"),
            2 => b("-1000"),
            _ => b(&format!("{}", self.rng.gen_range(-15..15))),
        }
    }

    /// The next command (`STRATA_DIFF_FAMILIES`, e.g. `hash,set`, limits
    /// the mix while a family is being worked on).
    pub fn next(&mut self) -> Cmd {
        let only = std::env::var("STRATA_DIFF_FAMILIES").unwrap_or_default();
        let on = |f: &str| only.is_empty() || only.split(',').any(|x| x == f);
        loop {
            let c = match self.rng.gen_range(0..100) {
                0..=17 if on("hash") => self.hash(),
                18..=34 if on("list") => self.list(),
                35..=51 if on("set") => self.set(),
                52..=70 if on("zset") => self.zset(),
                71..=77 if on("geo") => self.geo(),
                78..=85 if on("string") => self.strings(),
                86..=93 if on("stream") => self.streams(),
                94.. if on("generic") => self.generic(),
                _ => continue,
            };
            return c;
        }
    }

    fn generic(&mut self) -> Cmd {
        let kind = self.pick(&["h", "l", "s", "z", "str", "x"]);
        let k = self.key(kind);
        let k2 = self.key(kind);
        let e = Check::Exact;
        match self.rng.gen_range(0..20) {
            // Ballast reads: fetched from flash, promoted on the second read,
            // they push other values (collections too) out of RAM.
            18..=19 => (
                vec![
                    b("GET"),
                    b(&format!("ballast:{}", self.rng.gen_range(0..120))),
                ],
                e,
            ),
            14 => (vec![b("DUMP"), k.clone()], Check::DumpCross { key: k }),
            15 if kind != "h" => {
                let mut a = vec![b(self.pick(&["SORT", "SORT_RO"])), k];
                for opt in ["ALPHA", "DESC"] {
                    if self.chance(0.4) {
                        a.push(b(opt));
                    }
                }
                if self.chance(0.3) {
                    a.push(b("LIMIT"));
                    a.push(self.index());
                    a.push(self.count());
                }
                (a, e)
            }
            16 if self.chance(0.2) => (vec![b("MOVE"), k, b("1")], e),
            16 if self.chance(0.1) => (vec![b("SWAPDB"), b("0"), b("1")], e),
            17 => {
                let p = self.pick(&["l", "s", "z"]);
                (vec![b("SORT"), k, b("ALPHA"), b("STORE"), self.key(p)], e)
            }
            0 => (vec![b("TYPE"), k], e),
            1 => (vec![b("EXISTS"), k, k2], e),
            2 => (vec![b("OBJECT"), b("ENCODING"), k], e),
            3 if self.chance(0.3) => (vec![b("DEL"), k], e),
            4 => (vec![b("EXPIRE"), k, b("1000")], e),
            5 => (vec![b("PERSIST"), k], e),
            6 if self.chance(0.3) => (vec![b("RENAME"), k, k2], e),
            7 => (vec![b("COPY"), k, k2, b("REPLACE")], e),
            8 => (
                vec![
                    b("SET"),
                    b(&format!("str:{}", self.rng.gen_range(0..KEYS_PER_KIND))),
                    self.value(),
                ],
                e,
            ),
            9 => (vec![b("GET"), k], e),
            10 => (
                vec![
                    b("SCAN"),
                    b("0"),
                    b("TYPE"),
                    b(self.pick(&["hash", "list", "set", "zset", "string", "stream"])),
                ],
                Check::ScanAll,
            ),
            11 if self.chance(0.5) => (vec![b("APPEND"), k, b("x")], e),
            11 => (
                vec![
                    b("INCRBYFLOAT"),
                    b(&format!("str:{}", self.rng.gen_range(0..KEYS_PER_KIND))),
                    self.score(),
                ],
                e,
            ),
            12 => (vec![b("STRLEN"), k], e),
            _ => (vec![b("DBSIZE")], e),
        }
    }

    fn hash(&mut self) -> Cmd {
        let k = self.key("h");
        let e = Check::Exact;
        match self.rng.gen_range(0..30) {
            0..=6 => {
                let mut a = vec![b(self.pick(&["HSET", "HSET", "HMSET"])), k];
                for _ in 0..self.rng.gen_range(1..5) {
                    a.push(self.member());
                    a.push(self.value());
                }
                if self.chance(0.02) {
                    a.pop();
                }
                (a, e)
            }
            7 => (vec![b("HSETNX"), k, self.member(), self.value()], e),
            8..=9 => (vec![b("HGET"), k, self.member()], e),
            10 => (
                vec![b("HMGET"), k, self.member(), self.member(), self.member()],
                e,
            ),
            11..=12 => {
                let mut a = vec![b("HDEL"), k];
                for _ in 0..self.rng.gen_range(1..4) {
                    a.push(self.member());
                }
                (a, e)
            }
            13 => (vec![b("HEXISTS"), k, self.member()], e),
            14 => (vec![b("HLEN"), k], e),
            15 => (vec![b("HSTRLEN"), k, self.member()], e),
            16 => (vec![b("HKEYS"), k], Check::Unordered),
            17 => (vec![b("HVALS"), k], Check::Unordered),
            18 => (vec![b("HGETALL"), k], Check::Pairs),
            19..=20 => (
                vec![
                    b("HINCRBY"),
                    k,
                    b(&format!("n{}", self.rng.gen_range(0..4))),
                    self.int(),
                ],
                e,
            ),
            21 => (
                vec![
                    b("HINCRBYFLOAT"),
                    k.clone(),
                    b(&format!("n{}", self.rng.gen_range(0..4))),
                    self.score(),
                ],
                e,
            ),
            22 => {
                let mut a = vec![b("HRANDFIELD"), k.clone()];
                if self.chance(0.7) {
                    a.push(self.count());
                    if self.chance(0.5) {
                        a.push(b("WITHVALUES"));
                    }
                }
                (a, Check::Random { key: k })
            }
            23 => (
                vec![b("HSCAN"), k, b("0"), b("COUNT"), b("3")],
                Check::ScanAll,
            ),
            24 => (
                vec![b("HSCAN"), k, b("0"), b("MATCH"), b("m1*")],
                Check::ScanAll,
            ),
            25 => (vec![b("OBJECT"), b("ENCODING"), k], e),
            _ => (vec![b("HGET"), k, self.member()], e),
        }
    }

    fn list(&mut self) -> Cmd {
        let k = self.key("l");
        let e = Check::Exact;
        match self.rng.gen_range(0..34) {
            0..=7 => {
                let mut a = vec![b(self.pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"])), k];
                for _ in 0..self.rng.gen_range(1..5) {
                    a.push(self.value());
                }
                (a, e)
            }
            8..=9 => {
                let mut a = vec![b(self.pick(&["LPOP", "RPOP"])), k];
                if self.chance(0.5) {
                    a.push(self.count());
                }
                (a, e)
            }
            10 => (vec![b("LLEN"), k], e),
            11..=13 => (vec![b("LRANGE"), k, self.index(), self.index()], e),
            14 => (vec![b("LINDEX"), k, self.index()], e),
            15 => (vec![b("LSET"), k, self.index(), self.value()], e),
            16 => (
                vec![
                    b("LINSERT"),
                    k,
                    b(self.pick(&["BEFORE", "AFTER", "after", "x"])),
                    self.value(),
                    self.value(),
                ],
                e,
            ),
            17 => (vec![b("LREM"), k, self.index(), self.value()], e),
            18 if self.chance(0.4) => (vec![b("LTRIM"), k, self.index(), self.index()], e),
            19..=20 => {
                let mut a = vec![b("LPOS"), k, self.value()];
                for _ in 0..self.rng.gen_range(0..3) {
                    let opt = self.pick(&["RANK", "COUNT", "MAXLEN"]);
                    a.push(b(opt));
                    a.push(self.index());
                }
                (a, e)
            }
            21 => (
                vec![
                    b("LMOVE"),
                    k,
                    self.key("l"),
                    b(self.pick(&["LEFT", "RIGHT"])),
                    b(self.pick(&["LEFT", "RIGHT", "UP"])),
                ],
                e,
            ),
            22 => (vec![b("RPOPLPUSH"), k, self.key("l")], e),
            23 => {
                let n = self.rng.gen_range(1..4);
                let mut a = vec![b("LMPOP"), b(&n.to_string())];
                for _ in 0..n {
                    a.push(self.key("l"));
                }
                a.push(b(self.pick(&["LEFT", "RIGHT", "MIDDLE"])));
                if self.chance(0.5) {
                    a.push(b("COUNT"));
                    a.push(self.count());
                }
                (a, e)
            }
            24 => (vec![b("OBJECT"), b("ENCODING"), k], e),
            _ => (vec![b("LRANGE"), k, b("0"), b("-1")], e),
        }
    }

    fn set(&mut self) -> Cmd {
        let k = self.key("s");
        let e = Check::Exact;
        let u = Check::Unordered;
        match self.rng.gen_range(0..32) {
            0..=8 => {
                let mut a = vec![b("SADD"), k];
                for _ in 0..self.rng.gen_range(1..6) {
                    a.push(self.member());
                }
                (a, e)
            }
            9..=10 => {
                let mut a = vec![b("SREM"), k];
                for _ in 0..self.rng.gen_range(1..4) {
                    a.push(self.member());
                }
                (a, e)
            }
            11 => (vec![b("SISMEMBER"), k, self.member()], e),
            12 => (vec![b("SMISMEMBER"), k, self.member(), self.member()], e),
            13 => (vec![b("SCARD"), k], e),
            14 => (vec![b("SMEMBERS"), k], u),
            15 => {
                let mut a = vec![b("SRANDMEMBER"), k.clone()];
                if self.chance(0.7) {
                    a.push(self.count());
                }
                (a, Check::Random { key: k })
            }
            16 => {
                let mut a = vec![b("SPOP"), k.clone()];
                if self.chance(0.6) {
                    a.push(self.count());
                }
                (a, Check::Random { key: k })
            }
            17 => (vec![b("SMOVE"), k, self.key("s"), self.member()], e),
            18..=19 => (
                vec![
                    b(self.pick(&["SINTER", "SUNION", "SDIFF"])),
                    k,
                    self.key("s"),
                    self.key("s"),
                ],
                u,
            ),
            20..=21 => (
                vec![
                    b(self.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"])),
                    self.key("s"),
                    k,
                    self.key("s"),
                ],
                e,
            ),
            22 => {
                let mut a = vec![b("SINTERCARD"), b("2"), k, self.key("s")];
                if self.chance(0.5) {
                    a.push(b("LIMIT"));
                    a.push(self.count());
                }
                (a, e)
            }
            23 => (
                vec![b("SSCAN"), k, b("0"), b("COUNT"), b("5")],
                Check::ScanAll,
            ),
            24 => (vec![b("OBJECT"), b("ENCODING"), k], e),
            _ => (vec![b("SISMEMBER"), k, self.member()], e),
        }
    }

    /// A position near one of a few centres (some at the edges of the
    /// valid ranges), sometimes out of range or not a number.
    fn lon_lat(&mut self) -> [Vec<u8>; 2] {
        if self.chance(0.03) {
            return [
                b(self.pick(&["200", "x", "-180.5", "0"])),
                b(self.pick(&["0", "85.1", "y"])),
            ];
        }
        let (x, y) = self.pick(&[
            (13.36, 38.11),
            (15.08, 37.50),
            (2.35, 48.85),
            (-122.4, 37.7),
            (0.0, 0.0),
            (179.5, -10.0),
            (-179.5, 70.0),
            (10.0, 84.5),
        ]);
        let x = (x + self.rng.gen_range(-2.0..2.0f64)).clamp(-180.0, 180.0);
        let y = (y + self.rng.gen_range(-2.0..2.0f64)).clamp(-85.05, 85.05);
        [b(&format!("{x:.6}")), b(&format!("{y:.6}"))]
    }

    fn unit(&mut self) -> Vec<u8> {
        b(self.pick(&["m", "km", "km", "KM", "mi", "ft", "furlong"]))
    }

    fn radius(&mut self) -> [Vec<u8>; 2] {
        let r = match self.rng.gen_range(0..20) {
            0 => b("-1"),
            1 => b("x"),
            2 => b("0"),
            _ => b(self.pick(&["1", "30", "100", "250", "800", "5000", "20000", "150000"])),
        };
        [r, self.unit()]
    }

    fn geo_member(&mut self) -> Vec<u8> {
        b(&format!("p{}", self.rng.gen_range(0..40)))
    }

    /// Search options: the reply shape, order and count.
    fn geo_opts(&mut self, a: &mut Vec<Vec<u8>>, store: bool) {
        if !store {
            for o in ["WITHCOORD", "WITHDIST", "WITHHASH"] {
                if self.chance(0.3) {
                    a.push(b(o));
                }
            }
        }
        if self.chance(0.4) {
            a.push(b(self.pick(&["ASC", "DESC"])));
        }
        if self.chance(0.3) {
            a.push(b("COUNT"));
            a.push(self.count());
            if self.chance(0.3) {
                a.push(b("ANY"));
            }
        } else if self.chance(0.02) {
            a.push(b("ANY"));
        }
    }

    fn geo(&mut self) -> Cmd {
        let k = self.key("g");
        let e = Check::Exact;
        match self.rng.gen_range(0..20) {
            0..=5 => {
                let mut a = vec![b("GEOADD"), k];
                for opt in ["NX", "XX", "CH"] {
                    if self.chance(0.08) {
                        a.push(b(opt));
                    }
                }
                for _ in 0..self.rng.gen_range(1..4) {
                    a.extend(self.lon_lat());
                    a.push(self.geo_member());
                }
                (a, e)
            }
            6 => {
                let mut a = vec![b("GEODIST"), k, self.geo_member(), self.geo_member()];
                if self.chance(0.6) {
                    a.push(self.unit());
                }
                (a, e)
            }
            7 => (
                vec![b("GEOPOS"), k, self.geo_member(), self.geo_member()],
                e,
            ),
            8 => (
                vec![b("GEOHASH"), k, self.geo_member(), self.geo_member()],
                e,
            ),
            9 => (vec![b("ZREM"), k, self.geo_member()], e),
            10 => (vec![b("ZRANGE"), k, b("0"), b("-1"), b("WITHSCORES")], e),
            11..=14 => {
                let store = self.chance(0.25);
                let mut a = if store {
                    vec![b("GEOSEARCHSTORE"), self.key("g"), k]
                } else {
                    vec![b("GEOSEARCH"), k]
                };
                if self.chance(0.5) {
                    a.push(b("FROMMEMBER"));
                    a.push(self.geo_member());
                } else {
                    a.push(b("FROMLONLAT"));
                    a.extend(self.lon_lat());
                }
                if self.chance(0.5) {
                    a.push(b("BYRADIUS"));
                    a.extend(self.radius());
                } else {
                    let [w, u] = self.radius();
                    let [h, _] = self.radius();
                    a.extend([b("BYBOX"), w, h, u]);
                }
                self.geo_opts(&mut a, store);
                if store && self.chance(0.4) {
                    a.push(b("STOREDIST"));
                }
                (a, e)
            }
            _ => {
                let by_member = self.chance(0.5);
                let ro = self.chance(0.3);
                let name = match (by_member, ro) {
                    (false, false) => "GEORADIUS",
                    (false, true) => "GEORADIUS_RO",
                    (true, false) => "GEORADIUSBYMEMBER",
                    (true, true) => "GEORADIUSBYMEMBER_RO",
                };
                let mut a = vec![b(name), k];
                if by_member {
                    a.push(self.geo_member());
                } else {
                    a.extend(self.lon_lat());
                }
                a.extend(self.radius());
                let store = !ro && self.chance(0.3);
                self.geo_opts(&mut a, store);
                if store {
                    a.push(b(self.pick(&["STORE", "STOREDIST"])));
                    a.push(self.key("g"));
                }
                (a, e)
            }
        }
    }

    fn zset(&mut self) -> Cmd {
        // Lex ranges are defined only when all scores are equal (with mixed
        // scores Redis's skiplist walk depends on random node levels): the
        // `zl` keys hold score-0 members, and lex commands use only them.
        let lex = self.chance(0.3);
        let k = if lex {
            b(&format!("zl:{}", self.rng.gen_range(0..KEYS_PER_KIND)))
        } else {
            self.key("z")
        };
        // Never another kind's key: lex needs equal scores.
        let lk = b(&format!("zl:{}", self.rng.gen_range(0..KEYS_PER_KIND)));
        let e = Check::Exact;
        match self.rng.gen_range(0..44) {
            0..=8 => {
                let mut a = vec![b("ZADD"), k];
                for opt in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
                    if self.chance(0.08) {
                        a.push(b(opt));
                    }
                }
                for _ in 0..self.rng.gen_range(1..4) {
                    let sc = if lex { b("0") } else { self.score() };
                    a.push(sc);
                    a.push(self.member());
                }
                (a, e)
            }
            9 if !lex => (vec![b("ZINCRBY"), k, self.score(), self.member()], e),
            10..=11 => (vec![b("ZREM"), k, self.member(), self.member()], e),
            12 => (vec![b("ZCARD"), k], e),
            13 => (vec![b("ZSCORE"), k, self.member()], e),
            14 => (vec![b("ZMSCORE"), k, self.member(), self.member()], e),
            15 => (
                vec![b(self.pick(&["ZRANK", "ZREVRANK"])), k, self.member()],
                e,
            ),
            16 => (
                vec![b("ZCOUNT"), k, self.score_bound(), self.score_bound()],
                e,
            ),
            17 => (
                vec![b("ZLEXCOUNT"), lk, self.lex_bound(), self.lex_bound()],
                e,
            ),
            18..=20 => {
                let mut a = vec![b("ZRANGE"), k];
                match if lex { 2 } else { self.rng.gen_range(0..2) } {
                    0 => {
                        a.push(self.index());
                        a.push(self.index());
                    }
                    1 => {
                        a.push(self.score_bound());
                        a.push(self.score_bound());
                        a.push(b("BYSCORE"));
                    }
                    _ => {
                        a.push(self.lex_bound());
                        a.push(self.lex_bound());
                        a.push(b("BYLEX"));
                    }
                }
                if self.chance(0.3) {
                    a.push(b("REV"));
                }
                if self.chance(0.3) {
                    a.push(b("LIMIT"));
                    a.push(self.index());
                    a.push(self.count());
                }
                if self.chance(0.4) {
                    a.push(b("WITHSCORES"));
                }
                (a, e)
            }
            21 => (
                vec![
                    b("ZREVRANGE"),
                    k,
                    self.index(),
                    self.index(),
                    b("WITHSCORES"),
                ],
                e,
            ),
            22 => {
                let mut a = vec![
                    b(self.pick(&["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"])),
                    k,
                    self.score_bound(),
                    self.score_bound(),
                ];
                if self.chance(0.4) {
                    a.push(b("WITHSCORES"));
                }
                if self.chance(0.3) {
                    a.push(b("LIMIT"));
                    a.push(self.index());
                    a.push(self.count());
                }
                (a, e)
            }
            23 => (
                vec![
                    b(self.pick(&["ZRANGEBYLEX", "ZREVRANGEBYLEX"])),
                    lk,
                    self.lex_bound(),
                    self.lex_bound(),
                ],
                e,
            ),
            24 => (
                vec![
                    b("ZRANGESTORE"),
                    self.key("z"),
                    k,
                    self.index(),
                    self.index(),
                ],
                e,
            ),
            25 if self.chance(0.5) => {
                (vec![b("ZREMRANGEBYRANK"), k, self.index(), self.index()], e)
            }
            26 if self.chance(0.5) => (
                vec![
                    b("ZREMRANGEBYSCORE"),
                    k,
                    self.score_bound(),
                    self.score_bound(),
                ],
                e,
            ),
            27 if self.chance(0.5) => (
                vec![b("ZREMRANGEBYLEX"), lk, self.lex_bound(), self.lex_bound()],
                e,
            ),
            28..=29 => {
                let mut a = vec![b(self.pick(&["ZPOPMIN", "ZPOPMAX"])), k];
                if self.chance(0.5) {
                    a.push(self.count());
                }
                (a, e)
            }
            30 => {
                let mut a = vec![
                    b("ZMPOP"),
                    b("2"),
                    k,
                    self.key("z"),
                    b(self.pick(&["MIN", "MAX", "MID"])),
                ];
                if self.chance(0.5) {
                    a.push(b("COUNT"));
                    a.push(self.count());
                }
                (a, e)
            }
            31 => {
                let mut a = vec![b("ZRANDMEMBER"), k.clone()];
                if self.chance(0.7) {
                    a.push(self.count());
                    if self.chance(0.5) {
                        a.push(b("WITHSCORES"));
                    }
                }
                (a, Check::Random { key: k })
            }
            32..=33 => {
                let src = if self.chance(0.2) {
                    self.key("s")
                } else {
                    self.key("z")
                };
                let mut a = vec![b(self.pick(&["ZUNION", "ZINTER", "ZDIFF"])), b("2"), k, src];
                if self.chance(0.3) && a[0] != b"ZDIFF" {
                    a.push(b("WEIGHTS"));
                    a.push(self.score());
                    a.push(b(&format!("{}", self.rng.gen_range(-3..4))));
                }
                if self.chance(0.3) && a[0] != b"ZDIFF" {
                    a.push(b("AGGREGATE"));
                    a.push(b(self.pick(&["SUM", "MIN", "MAX", "AVG"])));
                }
                if self.chance(0.5) {
                    a.push(b("WITHSCORES"));
                }
                (a, e)
            }
            34..=35 => {
                let cmd = self.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]);
                let src = if self.chance(0.2) {
                    self.key("s")
                } else {
                    self.key("z")
                };
                let mut a = vec![b(cmd), self.key("z"), b("2"), k, src];
                if self.chance(0.3) && cmd != "ZDIFFSTORE" {
                    a.push(b("AGGREGATE"));
                    a.push(b(self.pick(&["SUM", "MIN", "MAX"])));
                }
                (a, e)
            }
            36 => {
                let mut a = vec![b("ZINTERCARD"), b("2"), k, self.key("z")];
                if self.chance(0.5) {
                    a.push(b("LIMIT"));
                    a.push(self.count());
                }
                (a, e)
            }
            37 => (
                vec![b("ZSCAN"), k, b("0"), b("COUNT"), b("4")],
                Check::ScanAll,
            ),
            38 => (vec![b("OBJECT"), b("ENCODING"), k], e),
            _ => (vec![b("ZRANGE"), k, b("0"), b("-1"), b("WITHSCORES")], e),
        }
    }
}
