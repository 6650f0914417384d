//! Redis's `pqsort` (pqsort.c: Bentley & McIlroy's quicksort that skips
//! the partitions outside a rank range), reproduced step by step: a search
//! with COUNT sorts only the first COUNT results this way, and with equal
//! distances the members it returns, and their order, are the ones this
//! exact algorithm leaves there.

use std::cmp::Ordering;

/// Sorts `v` so that positions `l..=r` hold what a full sort would put
/// there (ties as Redis's pqsort leaves them).
pub fn pqsort<T>(v: &mut [T], cmp: &impl Fn(&T, &T) -> Ordering, l: usize, r: usize) {
    sort(v, 0, v.len(), cmp, l, r);
}

/// Whether the range l..=r misses the partition `lo..lo + n`.
fn outside(l: usize, r: usize, lo: usize, n: usize) -> bool {
    (l < lo && r < lo) || (l >= lo + n && r >= lo + n)
}

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> Ordering) -> usize {
    let lt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Less;
    let gt = |x: usize, y: usize| cmp(&v[x], &v[y]) == Ordering::Greater;
    if lt(a, b) {
        if lt(b, c) {
            b
        } else if lt(a, c) {
            c
        } else {
            a
        }
    } else if gt(b, c) {
        b
    } else if lt(a, c) {
        a
    } else {
        c
    }
}

fn vecswap<T>(v: &mut [T], i: usize, j: usize, n: usize) {
    for k in 0..n {
        v.swap(i + k, j + k);
    }
}

fn sort<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    cmp: &impl Fn(&T, &T) -> Ordering,
    l: usize,
    r: usize,
) {
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) == Ordering::Greater {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                match cmp(&v[pb], &v[a]) {
                    Ordering::Greater => break,
                    Ordering::Equal => {
                        v.swap(pa, pb);
                        pa += 1;
                    }
                    Ordering::Less => {}
                }
                pb += 1;
            }
            while pb <= pc {
                match cmp(&v[pc], &v[a]) {
                    Ordering::Less => break,
                    Ordering::Equal => {
                        v.swap(pc, pd);
                        pd -= 1;
                    }
                    Ordering::Greater => {}
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let s = (pa - a).min(pb - pa);
        vecswap(v, a, pb - s, s);
        let s = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - s, s);
        let s = pb - pa;
        if s > 1 && !outside(l, r, a, s) {
            sort(v, a, s, cmp, l, r);
        }
        let s = pd - pc;
        if s > 1 {
            a = pn - s;
            n = s;
            if !outside(l, r, a, n) {
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    #[test]
    fn the_selected_ranks_hold_what_a_full_sort_puts_there() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..500 {
            let n = rng.gen_range(1..200);
            let v: Vec<u32> = (0..n).map(|_| rng.gen_range(0..50)).collect();
            let k = rng.gen_range(1..=n);
            let mut p = v.clone();
            pqsort(&mut p, &|a: &u32, b: &u32| a.cmp(b), 0, k - 1);
            let mut full = v.clone();
            full.sort();
            assert_eq!(p[..k], full[..k], "n {n} k {k}");
            let mut rest = p.clone();
            rest.sort();
            assert_eq!(rest, full, "a permutation");
        }
    }
}
