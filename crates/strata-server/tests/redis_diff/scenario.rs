//! Scripted multi-client scenarios run on redis-server and Strata side by
//! side (transactions, pub/sub): each step's replies are compared.

use crate::oracle::{sorted_elements, Conn};
use std::time::Duration;

/// One step, by client index: a command whose reply is compared (`Cmd`),
/// compared as a set (`Set`: replies in no order), or not compared
/// (`Any`: HELLO names the server's version); a command sent without
/// waiting for its reply (`Send`: a client that blocks), a reply a client
/// receives without sending (`Recv`: a pub/sub message, a blocked
/// client's answer); a pause (`Sleep`, ms).
pub enum Step {
    Cmd(usize, &'static str),
    Send(usize, &'static str),
    Set(usize, &'static str),
    Any(usize, &'static str),
    /// Compared with the words of each line in no order (ACL rules, which
    /// Redis lists in its hash table's order).
    Words(usize, &'static str),
    Recv(usize),
    Sleep(u64),
}

/// Runs `steps` with three clients on each server (after FLUSHALL).
pub fn scenario(name: &str, redis_port: u16, strata_port: u16, steps: &[Step]) {
    let clients = |port| {
        [
            Conn::connect(port),
            Conn::connect(port),
            Conn::connect(port),
        ]
    };
    let (mut r, mut s) = (clients(redis_port), clients(strata_port));
    r[0].cmd(&[b"FLUSHALL"]);
    s[0].cmd(&[b"FLUSHALL"]);
    for (i, step) in steps.iter().enumerate() {
        let (a, b, what) = match step {
            Step::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(*ms));
                continue;
            }
            Step::Send(who, words) => {
                let args: Vec<Vec<u8>> = words.split(' ').map(|w| w.as_bytes().to_vec()).collect();
                for c in [&mut r[*who], &mut s[*who]] {
                    c.send(&args);
                    c.flush();
                }
                continue;
            }
            Step::Cmd(who, words)
            | Step::Any(who, words)
            | Step::Set(who, words)
            | Step::Words(who, words) => {
                let args: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
                (
                    r[*who].cmd(&args),
                    s[*who].cmd(&args),
                    format!("client {who}: {words}"),
                )
            }
            Step::Recv(who) => (
                r[*who].reply(),
                s[*who].reply(),
                format!("client {who} receives"),
            ),
        };
        match step {
            Step::Any(..) => {}
            Step::Words(..) => assert_eq!(
                unordered_words(&a.bytes),
                unordered_words(&b.bytes),
                "{name}, step {i} ({what}): redis vs strata"
            ),
            Step::Set(..) => assert_eq!(
                sorted_elements(&a.frame),
                sorted_elements(&b.frame),
                "{name}, step {i} ({what}): redis vs strata"
            ),
            _ => assert_eq!(
                String::from_utf8_lossy(&a.bytes),
                String::from_utf8_lossy(&b.bytes),
                "{name}, step {i} ({what}): redis vs strata"
            ),
        }
    }
}

/// A reply's lines, each with its words sorted.
fn unordered_words(reply: &[u8]) -> Vec<Vec<String>> {
    String::from_utf8_lossy(reply)
        .split("\r\n")
        .map(|l| {
            let mut w: Vec<String> = l.split(' ').map(str::to_string).collect();
            w.sort();
            w
        })
        .collect()
}
