//! HyperLogLog: PFADD PFCOUNT PFMERGE over Redis's own string format
//! (`format`), so the bytes a GET returns, the counts and the sparse/dense
//! choices are Redis's; PFDEBUG and PFSELFTEST (`debug`), Redis's tools for
//! looking inside.
//!
//! Rooms: this file the commands; `format` the encoding; `debug` PFDEBUG
//! and PFSELFTEST.

mod debug;
mod format;

pub use debug::{pfdebug, pfselftest};

use super::{rmw, set_raw, store_keeping_ttl, with_strings};
use crate::base::reply;
use crate::command::{Ctx, Outcome};
use bytes::Bytes;
use strata_engine::{ExpireUpdate, Mutation};
use strata_protocol::{write_integer, write_simple};

use format::*;

/// The registers of several HLLs merged (each the largest of its inputs),
/// whether any input was dense, and the first input (PFMERGE's
/// destination).
struct Merged {
    max: Vec<u8>,
    use_dense: bool,
    first: Option<Bytes>,
}

/// Why inputs could not be merged (each a Redis error reply).
enum Refusal {
    Engine(strata_engine::EngineError),
    NotHll,
    Corrupt,
}

impl Refusal {
    fn write(&self, out: &mut bytes::BytesMut) {
        match self {
            Refusal::Engine(e) => reply::engine(out, e),
            Refusal::NotHll => reply::error(out, NOT_HLL),
            Refusal::Corrupt => reply::error(out, CORRUPT),
        }
    }
}

/// Merges the values of PFCOUNT's or PFMERGE's keys (a missing key is an
/// empty HLL), checking each as Redis does.
fn merge_inputs(
    values: Vec<Result<Option<Bytes>, strata_engine::EngineError>>,
) -> Result<Merged, Refusal> {
    let mut m = Merged {
        max: vec![0u8; REGISTERS],
        use_dense: false,
        first: None,
    };
    for (j, v) in values.into_iter().enumerate() {
        let v = match v {
            Ok(Some(v)) => v,
            Ok(None) => continue,
            Err(e) => return Err(Refusal::Engine(e)),
        };
        if !valid(&v) {
            return Err(Refusal::NotHll);
        }
        m.use_dense |= v[4] == DENSE;
        let regs = registers(&v).ok_or(Refusal::Corrupt)?;
        for (x, r) in m.max.iter_mut().zip(regs) {
            *x = (*x).max(r);
        }
        if j == 0 {
            m.first = Some(v);
        }
    }
    Ok(m)
}

/// `hll-sparse-max-bytes`: a sparse HLL growing past it becomes dense.
fn sparse_max(ctx: &Ctx<'_>) -> usize {
    ctx.config().hll_sparse_max_bytes as usize
}

pub fn pfadd(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let elements = args[2..].to_vec();
    let sparse_max = sparse_max(ctx);
    rmw(
        ctx,
        &args[1],
        move |cur| {
            let (mut v, mut updated) = match &cur {
                None => (empty(), true),
                // A dense HLL that no element raises stays as it is: no copy
                // of its 12 KB (most PFADDs of a warm HLL change nothing).
                Some(c)
                    if valid(c.value)
                        && c.value[4] == DENSE
                        && !elements.iter().any(|e| dense_would_change(c.value, e)) =>
                {
                    return (Mutation::MarkRaw, Ok(0));
                }
                Some(c) if valid(c.value) => (c.value.to_vec(), false),
                Some(_) => return (Mutation::None, Err(NOT_HLL)),
            };
            for e in &elements {
                match add(&mut v, e, sparse_max) {
                    Some(changed) => updated |= changed,
                    // As Redis, which changes the string in place: what the
                    // elements before changed stays.
                    None if updated && cur.is_some() => {
                        return (store_keeping_ttl(v, true).0, Err(CORRUPT))
                    }
                    None => return (Mutation::None, Err(CORRUPT)),
                }
            }
            if !updated {
                return (Mutation::MarkRaw, Ok(0));
            }
            invalidate(&mut v);
            (store_keeping_ttl(v, true).0, Ok(1))
        },
        |out, _, n| write_integer(out, n),
    )
}

pub fn pfcount(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    if args.len() > 2 {
        return with_strings(ctx, args[1..].to_vec(), Vec::new(), |_, _, values, out| {
            match merge_inputs(values) {
                Ok(m) => write_integer(out, count(&m.max) as i64),
                Err(e) => e.write(out),
            }
        });
    }
    let engine = ctx.engine().clone();
    rmw(
        ctx,
        &args[1],
        |cur| {
            // (The count, and whether the key was there: a keyspace hit.)
            let Some(c) = cur else {
                return (Mutation::None, Ok((0, false)));
            };
            if !valid(c.value) {
                return (Mutation::None, Err(NOT_HLL));
            }
            let v = c.value;
            if v[15] & 0x80 == 0 {
                let card = u64::from_le_bytes(v[8..16].try_into().unwrap_or_default());
                return (Mutation::MarkRaw, Ok((card as i64, true)));
            }
            let Some(regs) = registers(v) else {
                return (Mutation::None, Err(CORRUPT));
            };
            let card = count(&regs);
            let mut v = v.to_vec();
            v[8..16].copy_from_slice(&card.to_le_bytes());
            (store_keeping_ttl(v, true).0, Ok((card as i64, true)))
        },
        move |out, _, (n, found)| {
            engine.count_lookup(found);
            write_integer(out, n)
        },
    )
}

pub fn pfmerge(ctx: &mut Ctx<'_>, args: &[Bytes]) -> Outcome {
    let dest = args[1].clone();
    let sparse_max = sparse_max(ctx);
    with_strings(
        ctx,
        args[1..].to_vec(),
        vec![dest.clone()],
        move |engine, db, values, out| {
            let Merged {
                max,
                use_dense,
                first,
            } = match merge_inputs(values) {
                Ok(m) => m,
                Err(e) => return e.write(out),
            };
            let mut v = first.map(|d| d.to_vec()).unwrap_or_else(empty);
            if use_dense && !to_dense(&mut v) {
                return reply::error(out, CORRUPT);
            }
            for (j, &m) in max.iter().enumerate() {
                if m == 0 {
                    continue;
                }
                if v[4] == DENSE {
                    dense_update(&mut v, j, m);
                } else {
                    // Redis ignores a failed set here (the inputs were checked).
                    let _ = sparse_set(&mut v, j, m, sparse_max);
                }
            }
            invalidate(&mut v);
            match set_raw(engine, db, &dest, v, ExpireUpdate::Keep) {
                Ok(_) => write_simple(out, b"OK"),
                Err(e) => reply::engine(out, &e),
            }
        },
    )
}
