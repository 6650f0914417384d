//! The stream family: XADD (explicit and `ms-*` ids: `*` would differ
//! between the servers), XRANGE XREVRANGE XLEN XDEL XTRIM XSETID, XREAD and
//! XREADGROUP without BLOCK, XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM and
//! XINFO. Idle times and delivery times depend on the clock: those
//! replies are compared with them masked (`Check::Masked`,
//! `oracle::mask_clock`).

use super::{b, Check, Cmd, Gen, KEYS_PER_KIND};
use crate::oracle::mask_clock;
use rand::Rng;

impl Gen {
    fn stream_key(&mut self) -> Vec<u8> {
        if self.chance(0.03) {
            return self.key("h");
        }
        b(&format!("x:{}", self.rng.gen_range(0..KEYS_PER_KIND)))
    }

    /// The millisecond part of ids of key `k`: it grows as entries are
    /// added, so most explicit ids are accepted.
    fn xms(&mut self, k: &[u8]) -> u64 {
        let i = k.last().map_or(0, |c| (c % 8) as usize);
        self.xms[i]
    }

    fn xms_bump(&mut self, k: &[u8]) {
        let i = k.last().map_or(0, |c| (c % 8) as usize);
        self.xms[i] += self.rng.gen_range(0..3);
    }

    fn xid(&mut self, k: &[u8]) -> Vec<u8> {
        let ms = self.xms(k);
        match self.rng.gen_range(0..100) {
            0..=49 => b(&format!(
                "{}-{}",
                self.rng.gen_range(0..=ms),
                self.rng.gen_range(0..4)
            )),
            50..=69 => b(&format!("{}", self.rng.gen_range(0..=ms + 1))),
            70..=79 => b(&format!(
                "({}-{}",
                self.rng.gen_range(0..=ms),
                self.rng.gen_range(0..3)
            )),
            80..=89 => b(self.pick(&["-", "+", "0", "0-0", "$"])),
            90..=95 => b(self.pick(&["18446744073709551615-18446744073709551615", "(0-0", "(+"])),
            _ => b(self.pick(&["x", "1-x", "-1", "1--1", "01-1", ""])),
        }
    }

    fn xadd_id(&mut self, k: &[u8]) -> Vec<u8> {
        self.xms_bump(k);
        let ms = self.xms(k);
        match self.rng.gen_range(0..100) {
            0..=44 => b(&format!("{ms}-{}", self.rng.gen_range(0..3))),
            45..=74 => b(&format!("{ms}-*")),
            75..=84 => b(&format!("{ms}")),
            85..=92 => b(&format!("{}-1", ms.saturating_sub(5))),
            _ => b(self.pick(&["0-0", "0-*", "x-1", "*-1", "5-18446744073709551615"])),
        }
    }

    fn xfield(&mut self) -> Vec<u8> {
        b(self.pick(&["a", "b", "c", "1", "2", "field", "a", "a"]))
    }

    fn xvalue(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=39 => b(&format!("{}", self.rng.gen_range(-200i64..200))),
            40..=79 => b(&format!("v{}", self.rng.gen_range(0..1000))),
            80..=94 => vec![b'y'; self.rng.gen_range(0..300)],
            _ => vec![b'z'; self.rng.gen_range(300..1500)],
        }
    }

    fn xtrim_args(&mut self, a: &mut Vec<Vec<u8>>, k: &[u8]) {
        let ms = self.xms(k);
        a.push(b(self.pick(&["MAXLEN", "MINID", "maxlen"])));
        match self.rng.gen_range(0..10) {
            0..=3 => a.push(b("~")),
            4..=5 => a.push(b("=")),
            _ => {}
        }
        if a.iter().any(|x| x.eq_ignore_ascii_case(b"minid")) {
            a.push(b(&format!("{}", self.rng.gen_range(0..=ms))));
        } else {
            a.push(b(&format!("{}", self.rng.gen_range(-1i64..300))));
        }
        if self.chance(0.2) {
            a.push(b("LIMIT"));
            a.push(b(&format!("{}", self.rng.gen_range(-1i64..300))));
        }
    }

    fn group(&mut self) -> Vec<u8> {
        b(&format!("g{}", self.rng.gen_range(0..3)))
    }

    fn consumer(&mut self) -> Vec<u8> {
        b(&format!("c{}", self.rng.gen_range(0..3)))
    }

    pub(super) fn streams(&mut self) -> Cmd {
        let e = Check::Exact;
        let masked = Check::Masked(mask_clock);
        let k = self.stream_key();
        match self.rng.gen_range(0..40) {
            0..=11 => {
                let mut a = vec![b("XADD"), k.clone()];
                if self.chance(0.1) {
                    a.push(b("NOMKSTREAM"));
                }
                if self.chance(0.25) {
                    self.xtrim_args(&mut a, &k);
                }
                a.push(self.xadd_id(&k));
                let n = if self.chance(0.03) {
                    0
                } else {
                    self.rng.gen_range(1..4)
                };
                for _ in 0..n {
                    a.push(self.xfield());
                    a.push(self.xvalue());
                }
                if self.chance(0.02) {
                    a.push(b("dangling"));
                }
                (a, e)
            }
            12 | 13 => {
                let rev = self.chance(0.4);
                let mut a = vec![b(if rev { "XREVRANGE" } else { "XRANGE" }), k.clone()];
                a.push(self.xid(&k));
                a.push(self.xid(&k));
                if self.chance(0.4) {
                    a.push(b(self.pick(&["COUNT", "count", "LIMIT"])));
                    a.push(b(&format!("{}", self.rng.gen_range(-1i64..8))));
                }
                (a, e)
            }
            14 => (vec![b("XLEN"), k], e),
            15 => {
                let mut a = vec![b("XDEL"), k.clone()];
                for _ in 0..self.rng.gen_range(1..4) {
                    a.push(self.xid(&k));
                }
                (a, e)
            }
            16 => {
                let mut a = vec![b("XTRIM"), k.clone()];
                if self.chance(0.95) {
                    self.xtrim_args(&mut a, &k);
                }
                (a, e)
            }
            17 if self.chance(0.3) => {
                let ms = self.xms(&k);
                let mut a = vec![
                    b("XSETID"),
                    k.clone(),
                    b(&format!("{}-{}", ms + self.rng.gen_range(0..2), 5)),
                ];
                if self.chance(0.3) {
                    a.push(b("ENTRIESADDED"));
                    a.push(b(&format!("{}", self.rng.gen_range(-1i64..400))));
                }
                if self.chance(0.3) {
                    a.push(b("MAXDELETEDID"));
                    a.push(self.xid(&k));
                }
                (a, e)
            }
            18 | 19 => {
                let mut a = vec![b("XREAD")];
                if self.chance(0.5) {
                    a.push(b("COUNT"));
                    a.push(b(&format!("{}", self.rng.gen_range(0..6))));
                }
                a.push(b("STREAMS"));
                let two = self.chance(0.3);
                a.push(k.clone());
                let k2 = self.stream_key();
                if two {
                    a.push(k2.clone());
                }
                a.push(self.xid(&k));
                if two {
                    a.push(self.xid(&k2));
                }
                (a, e)
            }
            20..=23 => {
                let mut a = vec![b("XREADGROUP"), b("GROUP"), self.group(), self.consumer()];
                if self.chance(0.5) {
                    a.push(b("COUNT"));
                    a.push(b(&format!("{}", self.rng.gen_range(0..6))));
                }
                if self.chance(0.15) {
                    a.push(b("NOACK"));
                }
                a.push(b("STREAMS"));
                a.push(k.clone());
                a.push(if self.chance(0.7) {
                    b(">")
                } else {
                    self.xid(&k)
                });
                (a, e)
            }
            24..=26 => {
                let g = self.group();
                match self.rng.gen_range(0..12) {
                    0..=4 => {
                        let mut a = vec![b("XGROUP"), b("CREATE"), k.clone(), g, self.xid(&k)];
                        if self.chance(0.4) {
                            a.push(b("MKSTREAM"));
                        }
                        if self.chance(0.2) {
                            a.push(b("ENTRIESREAD"));
                            a.push(b(&format!("{}", self.rng.gen_range(-2i64..10))));
                        }
                        (a, e)
                    }
                    5 | 6 => {
                        let mut a = vec![b("XGROUP"), b("SETID"), k.clone(), g, self.xid(&k)];
                        if self.chance(0.3) {
                            a.push(b("ENTRIESREAD"));
                            a.push(b(&format!("{}", self.rng.gen_range(-1i64..10))));
                        }
                        (a, e)
                    }
                    7 => (vec![b("XGROUP"), b("DESTROY"), k, g], e),
                    8 => (
                        vec![b("XGROUP"), b("CREATECONSUMER"), k, g, self.consumer()],
                        e,
                    ),
                    9 => (
                        vec![b("XGROUP"), b("DELCONSUMER"), k, g, self.consumer()],
                        e,
                    ),
                    10 => (
                        vec![b("XGROUP"), b(self.pick(&["HELP", "create", "BOGUS"]))],
                        e,
                    ),
                    _ => (vec![b("XGROUP"), b("CREATE"), k], e),
                }
            }
            27 | 28 => {
                let mut a = vec![b("XACK"), k.clone(), self.group()];
                for _ in 0..self.rng.gen_range(1..4) {
                    a.push(self.xid(&k));
                }
                (a, e)
            }
            29 => (vec![b("XPENDING"), k, self.group()], e),
            30 => {
                let mut a = vec![b("XPENDING"), k.clone(), self.group()];
                if self.chance(0.2) {
                    a.push(b("IDLE"));
                    a.push(b(self.pick(&["0", "100000000"])));
                }
                a.push(self.xid(&k));
                a.push(self.xid(&k));
                a.push(b(&format!("{}", self.rng.gen_range(-1i64..8))));
                if self.chance(0.4) {
                    a.push(self.consumer());
                }
                (a, masked)
            }
            31 | 32 => {
                let mut a = vec![
                    b("XCLAIM"),
                    k.clone(),
                    self.group(),
                    self.consumer(),
                    b(self.pick(&["0", "0", "100000000", "-5", "x"])),
                ];
                for _ in 0..self.rng.gen_range(0..3) {
                    a.push(self.xid(&k));
                }
                for _ in 0..self.rng.gen_range(0..3) {
                    match self.rng.gen_range(0..6) {
                        0 => a.push(b("JUSTID")),
                        1 => a.push(b("FORCE")),
                        2 => {
                            a.push(b("RETRYCOUNT"));
                            a.push(b(&format!("{}", self.rng.gen_range(0..5))));
                        }
                        3 => {
                            a.push(b("LASTID"));
                            a.push(self.xid(&k));
                        }
                        4 => {
                            a.push(b("IDLE"));
                            a.push(b("10"));
                        }
                        _ => a.push(b("BOGUS")),
                    }
                }
                (a, e)
            }
            33 => {
                let mut a = vec![
                    b("XAUTOCLAIM"),
                    k.clone(),
                    self.group(),
                    self.consumer(),
                    b(self.pick(&["0", "0", "100000000", "x"])),
                    self.xid(&k),
                ];
                if self.chance(0.5) {
                    a.push(b("COUNT"));
                    a.push(b(&format!("{}", self.rng.gen_range(0..5))));
                }
                if self.chance(0.3) {
                    a.push(b("JUSTID"));
                }
                (a, e)
            }
            34 => {
                let mut a = vec![b("XINFO"), b("STREAM"), k];
                if self.chance(0.5) {
                    a.push(b("FULL"));
                    if self.chance(0.5) {
                        a.push(b("COUNT"));
                        a.push(b(&format!("{}", self.rng.gen_range(-1i64..5))));
                    }
                }
                (a, masked)
            }
            35 => (vec![b("XINFO"), b("GROUPS"), k], e),
            36 => (vec![b("XINFO"), b("CONSUMERS"), k, self.group()], masked),
            37 if self.chance(0.5) => (vec![b("TYPE"), k], e),
            37 => (vec![b("DUMP"), k.clone()], Check::DumpCross { key: k }),
            38 if self.chance(0.2) => (vec![b("DEL"), k], e),
            _ => (vec![b("OBJECT"), b("ENCODING"), k], e),
        }
    }
}
