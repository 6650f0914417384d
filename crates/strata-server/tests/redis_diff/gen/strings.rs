//! The string family of the mix beyond GET/SET: bitmaps (SETBIT GETBIT
//! BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO), LCS, and HyperLogLog
//! (PFADD PFCOUNT PFMERGE PFDEBUG, whose strings are compared byte for byte).

use super::{b, Check, Cmd, Gen, KEYS_PER_KIND};
use rand::Rng;

impl Gen {
    fn bit_offset(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=79 => b(&format!("{}", self.rng.gen_range(0..300))),
            80..=89 => b(&format!("{}", self.rng.gen_range(300..9000))),
            90..=93 => b("-1"),
            94..=96 => b("4294967296"),
            _ => b("x"),
        }
    }

    fn bit_range(&mut self, a: &mut Vec<Vec<u8>>) {
        if self.chance(0.6) {
            a.push(self.index());
            if self.chance(0.85) {
                a.push(self.index());
                if self.chance(0.5) {
                    a.push(b(self.pick(&["BYTE", "BIT", "bit", "WORD"])));
                }
            }
        }
    }

    fn field_type(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=44 => b(&format!("u{}", self.rng.gen_range(1..=63))),
            45..=89 => b(&format!("i{}", self.rng.gen_range(1..=64))),
            90..=92 => b("u64"),
            93..=95 => b("i0"),
            _ => b(self.pick(&["x8", "I8", "u"])),
        }
    }

    fn field_offset(&mut self) -> Vec<u8> {
        if self.chance(0.3) {
            b(&format!("#{}", self.rng.gen_range(0..12)))
        } else {
            self.bit_offset()
        }
    }

    fn field_value(&mut self) -> Vec<u8> {
        match self.rng.gen_range(0..100) {
            0..=59 => b(&format!("{}", self.rng.gen_range(-300i64..300))),
            60..=79 => b(&format!("{}", self.rng.gen::<i64>())),
            80..=89 => b(self.pick(&[
                "9223372036854775807",
                "-9223372036854775808",
                "4294967295",
                "-1",
            ])),
            _ => self.int(),
        }
    }

    /// A short string over a small alphabet (LCS has matches to find).
    fn lcs_string(&mut self) -> Vec<u8> {
        let n = self.rng.gen_range(0..30);
        (0..n).map(|_| self.pick(b"abcde")).collect()
    }

    fn hll_elements(&mut self, a: &mut Vec<Vec<u8>>) {
        let n = match self.rng.gen_range(0..10) {
            0..=6 => self.rng.gen_range(0..6),
            7..=8 => self.rng.gen_range(6..200),
            _ => self.rng.gen_range(200..3000),
        };
        let range = self.pick(&[50u32, 1000, 100_000]);
        for _ in 0..n {
            a.push(b(&format!("e{}", self.rng.gen_range(0..range))));
        }
    }

    pub(super) fn strings(&mut self) -> Cmd {
        let e = Check::Exact;
        let bm = self.key("bm");
        match self.rng.gen_range(0..32) {
            0..=4 => {
                let bit = b(self.pick(&["0", "1", "1", "2"]));
                (vec![b("SETBIT"), bm, self.bit_offset(), bit], e)
            }
            5 => (vec![b("GETBIT"), bm, self.bit_offset()], e),
            6 | 7 => {
                let mut a = vec![b("BITCOUNT"), bm];
                self.bit_range(&mut a);
                (a, e)
            }
            8 | 9 => {
                let mut a = vec![b("BITPOS"), bm, b(self.pick(&["0", "1", "1", "2"]))];
                self.bit_range(&mut a);
                (a, e)
            }
            10 => {
                let op = self.pick(&["AND", "OR", "XOR", "NOT", "not", "NAND"]);
                let mut a = vec![b("BITOP"), b(op), self.key("bm")];
                for _ in 0..self.rng.gen_range(1..4) {
                    a.push(self.key("bm"));
                }
                (a, e)
            }
            11..=13 => {
                let ro = self.chance(0.2);
                let mut a = vec![b(if ro { "BITFIELD_RO" } else { "BITFIELD" }), bm];
                for _ in 0..self.rng.gen_range(0..4) {
                    match self.rng.gen_range(0..10) {
                        0..=3 => {
                            a.push(b("GET"));
                            a.push(self.field_type());
                            a.push(self.field_offset());
                        }
                        4..=8 => {
                            a.push(b(self.pick(&["SET", "INCRBY", "incrby"])));
                            a.push(self.field_type());
                            a.push(self.field_offset());
                            a.push(self.field_value());
                        }
                        _ => {
                            a.push(b("OVERFLOW"));
                            a.push(b(self.pick(&["WRAP", "SAT", "FAIL", "fail", "BOUNCE"])));
                        }
                    }
                }
                (a, e)
            }
            14 => (vec![b("GET"), bm], e),
            15 | 16 => (vec![b("SET"), self.key("str"), self.lcs_string()], e),
            17 | 18 => {
                let mut a = vec![b("LCS"), self.key("str"), self.key("str")];
                for _ in 0..self.rng.gen_range(0..3) {
                    match self.rng.gen_range(0..5) {
                        0 => a.push(b("LEN")),
                        1 => a.push(b("IDX")),
                        2 => a.push(b("WITHMATCHLEN")),
                        3 => {
                            a.push(b("MINMATCHLEN"));
                            a.push(b(&format!("{}", self.rng.gen_range(-1..4))));
                        }
                        _ => a.push(b("BOGUS")),
                    }
                }
                (a, e)
            }
            19..=23 => {
                let mut a = vec![b("PFADD"), self.key("hll")];
                self.hll_elements(&mut a);
                (a, e)
            }
            24 | 25 => {
                let mut a = vec![b("PFCOUNT"), self.key("hll")];
                if self.chance(0.3) {
                    a.push(self.key("hll"));
                }
                (a, e)
            }
            26 => {
                let mut a = vec![b("PFMERGE"), self.key("hll")];
                for _ in 0..self.rng.gen_range(0..3) {
                    a.push(self.key("hll"));
                }
                (a, e)
            }
            27 => (vec![b("GET"), self.key("hll")], e),
            28 => (
                vec![
                    b("SETRANGE"),
                    b(&format!("hll:{}", self.rng.gen_range(0..KEYS_PER_KIND))),
                    b("3"),
                    b("x"),
                ],
                e,
            ),
            29 | 30 => {
                let sub = self.pick(&["GETREG", "DECODE", "encoding", "TODENSE", "FOO"]);
                (vec![b("PFDEBUG"), b(sub), self.key("hll")], e)
            }
            _ => (vec![b("STRLEN"), bm], e),
        }
    }
}
