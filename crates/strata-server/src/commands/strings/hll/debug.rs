//! PFDEBUG and PFSELFTEST: Redis's tools for looking inside HyperLogLog
//! values and checking the implementation (`pfdebugCommand`,
//! `pfselftestCommand` of hyperloglog.c, Redis 7.0), with its replies.

use super::format::*;
use super::rmw;
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use crate::commands::is;
use bytes::{Bytes, BytesMut};
use rand::Rng;
use strata_engine::{ExpireUpdate, Mutation};
use strata_protocol::{write_array_len, write_bulk, write_integer, write_simple};

/// What a PFDEBUG subcommand answers (errors with a fixed text are the
/// closure's `Err`).
enum Answer {
    Registers(Vec<u8>),
    Decoded(String),
    Encoding(&'static str),
    Converted(bool),
    Unknown(String),
    Arity(String),
}

/// `PFDEBUG <GETREG|DECODE|ENCODING|TODENSE> key`. As in Redis, the key
/// must exist and hold an HLL before the subcommand is looked at; GETREG
/// and TODENSE make a sparse HLL dense.
pub fn pfdebug(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let sub = String::from_utf8_lossy(&args[1]).into_owned();
    let argc = args.len();
    rmw(
        ctx,
        &args[2],
        move |cur| {
            let Some(c) = cur else {
                return (Mutation::None, Err("ERR The specified key does not exist"));
            };
            if !valid(c.value) {
                return (Mutation::None, Err(NOT_HLL));
            }
            let v = c.value;
            let known = ["getreg", "decode", "encoding", "todense"];
            if !known.iter().any(|k| is(sub.as_bytes(), k)) {
                return (Mutation::MarkRaw, Ok(Answer::Unknown(sub.clone())));
            }
            if argc != 3 {
                return (Mutation::MarkRaw, Ok(Answer::Arity(sub.clone())));
            }
            let dense = |v: &[u8]| -> Option<Vec<u8>> {
                let mut d = v.to_vec();
                to_dense(&mut d).then_some(d)
            };
            let keep = |d: Vec<u8>| Mutation::SetRaw {
                value: d.into(),
                expire: ExpireUpdate::Keep,
            };
            if is(sub.as_bytes(), "getreg") {
                let Some(d) = dense(v) else {
                    return (Mutation::None, Err(CORRUPT));
                };
                let regs = registers(&d).unwrap_or_default();
                let m = if v[4] == SPARSE {
                    keep(d)
                } else {
                    Mutation::MarkRaw
                };
                (m, Ok(Answer::Registers(regs)))
            } else if is(sub.as_bytes(), "todense") {
                if v[4] == DENSE {
                    return (Mutation::MarkRaw, Ok(Answer::Converted(false)));
                }
                match dense(v) {
                    Some(d) => (keep(d), Ok(Answer::Converted(true))),
                    None => (Mutation::None, Err(CORRUPT)),
                }
            } else if is(sub.as_bytes(), "encoding") {
                let e = if v[4] == DENSE { "dense" } else { "sparse" };
                (Mutation::MarkRaw, Ok(Answer::Encoding(e)))
            } else if v[4] != SPARSE {
                (Mutation::MarkRaw, Err("ERR HLL encoding is not sparse"))
            } else {
                (Mutation::MarkRaw, Ok(Answer::Decoded(decode(v))))
            }
        },
        |out: &mut BytesMut, _, a| match a {
            Answer::Registers(regs) => {
                write_array_len(out, regs.len());
                for r in regs {
                    write_integer(out, r as i64);
                }
            }
            Answer::Decoded(s) => write_bulk(out, s.as_bytes()),
            Answer::Encoding(e) => write_simple(out, e.as_bytes()),
            Answer::Converted(c) => write_integer(out, c as i64),
            Answer::Unknown(s) => {
                reply::error(out, &format!("ERR Unknown PFDEBUG subcommand '{s}'"))
            }
            Answer::Arity(s) => reply::error(
                out,
                &format!("ERR Wrong number of arguments for the '{s}' subcommand"),
            ),
        },
    )
}

/// PFDEBUG DECODE's text of a sparse HLL's opcodes ("z:len" ZERO,
/// "Z:len" XZERO, "v:value,len" VAL).
fn decode(v: &[u8]) -> String {
    let mut out = Vec::new();
    let mut p = HDR;
    while p < v.len() {
        let (is_val, value, len, size) = opcode(v, p);
        out.push(if is_val {
            format!("v:{value},{len}")
        } else if size == 2 {
            format!("Z:{len}")
        } else {
            format!("z:{len}")
        });
        p += size;
    }
    out.join(" ")
}

/// PFSELFTEST: checks the dense registers' packing with random values,
/// then adds 10,000,000 elements to a dense and a sparse HLL at once and
/// checks at each power of ten that the sparse one is still sparse while
/// small, that both count alike, and that the error is within six
/// standard errors (Redis's test, run off the runtime's workers).
pub fn pfselftest(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> Outcome {
    let sparse_max = ctx.config().hll_sparse_max_bytes as usize;
    Outcome::Pending {
        reply: Box::pin(async move {
            let mut out = BytesMut::new();
            match tokio::task::spawn_blocking(move || selftest(sparse_max)).await {
                Ok(Ok(())) => write_simple(&mut out, b"OK"),
                Ok(Err(e)) => reply::error(&mut out, &e),
                Err(e) => reply::error(&mut out, &format!("ERR {e}")),
            }
            out
        }),
        write: false,
    }
}

/// `HLL_TEST_CYCLES`.
const TEST_CYCLES: usize = 1000;

fn selftest(sparse_max: usize) -> Result<(), String> {
    let mut rng = rand::thread_rng();
    let mut dense = empty();
    to_dense(&mut dense);
    let mut bytes = [0u8; REGISTERS];
    for _ in 0..TEST_CYCLES {
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = rng.gen::<u8>() & REGISTER_MAX;
            dense_set(&mut dense[HDR..], i, *b);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let got = dense_get(&dense[HDR..], i);
            if got != b {
                return Err(format!(
                    "TESTFAILED Register {i} should be {b} but is {got}"
                ));
            }
        }
    }
    dense[HDR..].fill(0);
    let mut sparse = empty();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed: u64 = rng.gen();
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        add(&mut dense, &ele, sparse_max);
        if add(&mut sparse, &ele, sparse_max).is_none() {
            return Err("TESTFAILED the sparse HLL became corrupt".into());
        }
        if j != checkpoint {
            continue;
        }
        if (j as usize) < sparse_max / 2 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let n = count(&registers(&dense).unwrap_or_default());
        if Some(n) != registers(&sparse).map(|r| count(&r)) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(n);
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_self_test_passes() {
        assert_eq!(super::selftest(3000), Ok(()));
    }
}
