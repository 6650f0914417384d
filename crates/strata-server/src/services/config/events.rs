//! `notify-keyspace-events`' classes, as flags: what the option's
//! letters mean (`parse`), and how CONFIG GET shows them (`render`).
//! `services::notify` sends the events these enable.

pub const GENERIC: u32 = 1 << 0;
pub const STRING: u32 = 1 << 1;
pub const LIST: u32 = 1 << 2;
pub const SET: u32 = 1 << 3;
pub const HASH: u32 = 1 << 4;
pub const ZSET: u32 = 1 << 5;
pub const EXPIRED: u32 = 1 << 6;
pub const EVICTED: u32 = 1 << 7;
pub const STREAM: u32 = 1 << 8;
pub const MODULE: u32 = 1 << 9;
pub const NEW: u32 = 1 << 10;
pub const KEYSPACE: u32 = 1 << 11;
pub const KEYEVENT: u32 = 1 << 12;
pub const KEY_MISS: u32 = 1 << 13;
/// `A`: every class but `n` and `m`.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The flags of a `notify-keyspace-events` string, or None for a
/// character Redis refuses.
pub fn parse(s: &str) -> Option<u32> {
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            't' => STREAM,
            'd' => MODULE,
            'n' => NEW,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            'm' => KEY_MISS,
            _ => return None,
        };
    }
    Some(f)
}

/// The flags as CONFIG GET shows them (Redis's order).
pub fn render(f: u32) -> String {
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            (NEW, 'n'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}
