//! One ACL selector (Redis 7.0's `aclSelector`): the commands, keys and
//! channels it allows, the rules that change them (`ACLSetSelector`), the
//! check of one command against it (`ACLSelectorCheckCmd`) and its
//! description in rules (`ACLDescribeSelector`).
//!
//! Invariant: a selector has a bit per command id of the ACL table and one
//! more, the last, set only by `+@all`: the "future commands" bit that
//! tells a description to start from `+@all` rather than `-@all`. The bits
//! past `allowed`'s words all equal `fill` (`+@all` and `-@all` only set
//! `fill`), so the default user's selector needs no table: the table is
//! built on first use by a rule or a check that names commands.

use super::has_spaces;
use super::table::{table, Table};
use crate::base::glob::glob_match;
use crate::registry::describe::{KEY_READ, KEY_WRITE};
use bytes::Bytes;
use std::collections::HashMap;

/// Why a rule was refused (`ACLSetUserStringError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    Syntax,
    Unknown,
    KeyAfterAll,
    ChannelAfterAll,
    NoSuchPassword,
    BadHash,
    SubFirstArg,
}

impl RuleError {
    pub fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::Unknown => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// What a selector refused, ordered as Redis ranks them when no selector
/// allows a command (`ACL_DENIED_CMD` < `KEY` < `CHANNEL`), with the
/// argument's position for a key or a channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command,
    Key(usize),
    Channel(usize),
}

#[derive(Clone, Default)]
pub struct Selector {
    pub root: bool,
    allowed: Vec<u64>,
    /// The value of every bit past `allowed`.
    fill: bool,
    allcommands: bool,
    /// Command id -> first arguments allowed although the command is not
    /// (`+select|0`), as given.
    firstargs: HashMap<usize, Vec<String>>,
    pub allkeys: bool,
    /// Key patterns with the permissions they grant (`KEY_READ` ...).
    patterns: Vec<(Vec<u8>, u8)>,
    pub allchannels: bool,
    channels: Vec<Vec<u8>>,
}

/// A command as a selector checks it.
pub struct Check<'a> {
    pub id: usize,
    pub no_auth: bool,
    pub args: &'a [Bytes],
    /// Whether the command is a subcommand (its first argument is `args[2]`).
    pub is_sub: bool,
    /// The keys with the permissions each needs, found once for every
    /// selector (`aclKeyResultCache`).
    pub keys: &'a dyn Fn() -> Vec<(usize, u8)>,
    /// The channels: position, and whether it is a pattern (PSUBSCRIBE).
    pub channels: &'a [(usize, bool)],
}

impl Selector {
    pub fn new(root: bool) -> Selector {
        Selector {
            root,
            allowed: Vec::new(),
            ..Selector::default()
        }
    }

    fn bit(&self, id: usize) -> bool {
        match self.allowed.get(id / 64) {
            Some(w) => w & (1 << (id % 64)) != 0,
            None => self.fill,
        }
    }

    fn set_bit(&mut self, id: usize, on: bool) {
        if self.allowed.len() <= id / 64 {
            let words = table().len() / 64 + 1;
            let fill = if self.fill { u64::MAX } else { 0 };
            self.allowed.resize(words.max(id / 64 + 1), fill);
        }
        if on {
            self.allowed[id / 64] |= 1 << (id % 64);
        } else {
            self.allowed[id / 64] &= !(1 << (id % 64));
            self.allcommands = false;
        }
    }

    /// Whether `+@all` (not only every present command) was given.
    fn future(&self) -> bool {
        self.bit(table().len())
    }

    /// Allows or denies a command and, of a container, its subcommands
    /// (`ACLChangeSelectorPerm`).
    fn change(&mut self, t: &Table, id: usize, allow: bool) {
        self.set_bit(id, allow);
        self.firstargs.remove(&id);
        for kid in t.children(id) {
            self.set_bit(kid, allow);
        }
    }

    fn change_category(&mut self, t: &Table, cat: u32, allow: bool) {
        for id in 0..t.len() {
            if t.entry(id).categories & cat != 0 {
                self.change(t, id, allow);
            }
        }
    }

    /// Applies one rule (`ACLSetSelector`); on error nothing changed.
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let lower = String::from_utf8_lossy(op).to_ascii_lowercase();
        match lower.as_str() {
            "allkeys" | "~*" => {
                self.allkeys = true;
                self.patterns.clear();
                return Ok(());
            }
            "resetkeys" => {
                self.allkeys = false;
                self.patterns.clear();
                return Ok(());
            }
            "allchannels" | "&*" => {
                self.allchannels = true;
                self.channels.clear();
                return Ok(());
            }
            "resetchannels" => {
                self.allchannels = false;
                self.channels.clear();
                return Ok(());
            }
            "allcommands" | "+@all" => {
                self.allowed.clear();
                self.fill = true;
                self.allcommands = true;
                self.firstargs.clear();
                return Ok(());
            }
            "nocommands" | "-@all" => {
                self.allowed.clear();
                self.fill = false;
                self.allcommands = false;
                self.firstargs.clear();
                return Ok(());
            }
            _ => {}
        }
        let t = table();
        match op.first() {
            Some(b'~') | Some(b'%') => {
                if self.allkeys {
                    return Err(RuleError::KeyAfterAll);
                }
                let (flags, offset) = if op[0] == b'%' {
                    let mut flags = 0;
                    let mut i = 1;
                    loop {
                        match op.get(i).map(u8::to_ascii_uppercase) {
                            Some(b'R') if flags & KEY_READ == 0 => flags |= KEY_READ,
                            Some(b'W') if flags & KEY_WRITE == 0 => flags |= KEY_WRITE,
                            Some(b'~') => {
                                i += 1;
                                break;
                            }
                            // (Redis accepts "%R" with no '~' as the
                            // pattern "" too.)
                            None => break,
                            _ => return Err(RuleError::Syntax),
                        }
                        i += 1;
                    }
                    // (`%~*`: no permission named, refused as Redis 7.0.)
                    if flags == 0 {
                        return Err(RuleError::Syntax);
                    }
                    (flags, i)
                } else {
                    (KEY_READ | KEY_WRITE, 1)
                };
                let pat = &op[offset.min(op.len())..];
                if has_spaces(pat) {
                    return Err(RuleError::Syntax);
                }
                match self.patterns.iter_mut().find(|(p, _)| p == pat) {
                    Some((_, f)) => *f |= flags,
                    None => self.patterns.push((pat.to_vec(), flags)),
                }
                self.allkeys = false;
            }
            Some(b'&') => {
                if self.allchannels {
                    return Err(RuleError::ChannelAfterAll);
                }
                let pat = &op[1..];
                if has_spaces(pat) {
                    return Err(RuleError::Syntax);
                }
                if !self.channels.iter().any(|c| c == pat) {
                    self.channels.push(pat.to_vec());
                }
                self.allchannels = false;
            }
            Some(b'+') if op.get(1) != Some(&b'@') => {
                let name = &lower[1..];
                match name.rsplit_once('|') {
                    None => {
                        let id = t.id(name).ok_or(RuleError::Unknown)?;
                        self.change(t, id, true);
                    }
                    Some((cmd, sub)) => {
                        let id = t.id(cmd).ok_or(RuleError::Unknown)?;
                        if t.entry(id).parent.is_some() {
                            return Err(RuleError::SubFirstArg);
                        }
                        if sub.is_empty() {
                            return Err(RuleError::Syntax);
                        }
                        if t.children(id).next().is_some() {
                            let sid = t.id(name).ok_or(RuleError::Unknown)?;
                            self.change(t, sid, true);
                        } else {
                            // A first argument of a command without
                            // subcommands (`+select|0`), kept as given.
                            let given = String::from_utf8_lossy(&op[1 + cmd.len() + 1..]);
                            let list = self.firstargs.entry(id).or_default();
                            if !list.iter().any(|a| a.eq_ignore_ascii_case(&given)) {
                                list.push(given.into_owned());
                            }
                        }
                    }
                }
            }
            Some(b'-') if op.get(1) != Some(&b'@') => {
                let id = t.id(&lower[1..]).ok_or(RuleError::Unknown)?;
                self.change(t, id, false);
            }
            Some(b'+') | Some(b'-') => {
                let cat = t.category(&lower[2..]).ok_or(RuleError::Unknown)?;
                self.change_category(t, cat, op[0] == b'+');
            }
            _ => return Err(RuleError::Syntax),
        }
        Ok(())
    }

    /// Whether this selector lets the command run (`ACLSelectorCheckCmd`).
    pub fn check(&self, c: &Check<'_>, keys: &mut Option<Vec<(usize, u8)>>) -> Result<(), Denied> {
        if !self.allcommands && !c.no_auth && !self.bit(c.id) {
            let at = if c.is_sub { 2 } else { 1 };
            let ok = c.args.get(at).is_some_and(|a| {
                self.firstargs
                    .get(&c.id)
                    .is_some_and(|l| l.iter().any(|x| x.as_bytes().eq_ignore_ascii_case(a)))
            });
            if !ok {
                return Err(Denied::Command);
            }
        }
        if !self.allkeys {
            for &(pos, need) in keys.get_or_insert_with(|| (c.keys)()).iter() {
                if !self.key_ok(&c.args[pos], need) {
                    return Err(Denied::Key(pos));
                }
            }
        }
        if !self.allchannels {
            for &(pos, pattern) in c.channels {
                if !self.channel_ok(&c.args[pos], pattern) {
                    return Err(Denied::Channel(pos));
                }
            }
        }
        Ok(())
    }

    fn key_ok(&self, key: &[u8], need: u8) -> bool {
        self.allkeys
            || self
                .patterns
                .iter()
                .any(|(p, f)| f & need == need && glob_match(p, key, false))
    }

    /// A channel against the patterns: a PSUBSCRIBE pattern only matches
    /// a rule literally (`ACLCheckChannelAgainstList`).
    pub fn channel_ok(&self, channel: &[u8], pattern: bool) -> bool {
        self.allchannels
            || self.channels.iter().any(|p| {
                if pattern {
                    p == channel
                } else {
                    glob_match(p, channel, false)
                }
            })
    }

    /// The channel patterns, as given (without `&`).
    pub fn channel_rules(&self) -> Vec<String> {
        self.channels
            .iter()
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect()
    }

    /// The key patterns as rules (`~k*`, `%R~r*`), space-separated, with
    /// their bytes as given.
    pub fn describe_keys(&self) -> Vec<u8> {
        if self.allkeys {
            return b"~*".to_vec();
        }
        let mut out = Vec::new();
        for (p, f) in &self.patterns {
            if !out.is_empty() {
                out.push(b' ');
            }
            out.extend_from_slice(match *f {
                x if x == KEY_READ => b"%R~",
                x if x == KEY_WRITE => b"%W~",
                _ => b"~",
            });
            out.extend_from_slice(p);
        }
        out
    }

    /// The channel patterns as ACL GETUSER gives them (`&a &b`).
    pub fn describe_channels(&self) -> Vec<u8> {
        if self.allchannels {
            return b"&*".to_vec();
        }
        let mut out = Vec::new();
        for c in &self.channels {
            if !out.is_empty() {
                out.push(b' ');
            }
            out.push(b'&');
            out.extend_from_slice(c);
        }
        out
    }

    /// The command rules, starting from `+@all` or `-@all`, then the
    /// categories that fit best, then single commands
    /// (`ACLDescribeSelectorCommandRules`).
    pub fn describe_commands(&self) -> String {
        let t = table();
        let additive = !self.future();
        let mut rules = vec![if additive { "-@all" } else { "+@all" }.to_string()];
        let mut fake = Selector::new(false);
        fake.apply(rules[0].as_bytes()).ok();
        let mut temp = self.clone();
        let mut applied = vec![false; t.categories()];
        loop {
            let mut best = None;
            let (mut mindiff, mut maxsame) = (usize::MAX, 0);
            for (j, done) in applied.iter().enumerate() {
                if *done {
                    continue;
                }
                let (on, off) = temp.count_category(t, 1 << j);
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                    best = Some(j);
                    mindiff = diff;
                    maxsame = same;
                }
            }
            let Some(j) = best else { break };
            let name = t.category_name(j);
            fake.change_category(t, 1 << j, additive);
            temp.change_category(t, 1 << j, !additive);
            rules.push(format!("{}@{name}", if additive { '+' } else { '-' }));
            applied[j] = true;
        }
        for id in 0..t.len() {
            let mine = self.bit(id);
            if mine != fake.bit(id) {
                rules.push(format!(
                    "{}{}",
                    if mine { '+' } else { '-' },
                    t.entry(id).name
                ));
                fake.change(t, id, mine);
            }
            if !mine {
                for a in self.firstargs.get(&id).into_iter().flatten() {
                    rules.push(format!("+{}|{a}", t.entry(id).name));
                }
            }
        }
        rules.join(" ")
    }

    fn count_category(&self, t: &Table, cat: u32) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for id in 0..t.len() {
            if t.entry(id).categories & cat != 0 {
                if self.bit(id) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }

    /// The whole selector as rules (`ACLDescribeSelector`), its patterns'
    /// bytes as given.
    pub fn describe(&self) -> Vec<u8> {
        let mut s = self.describe_keys();
        if !s.is_empty() {
            s.push(b' ');
        }
        if self.allchannels {
            s.extend_from_slice(b"&* ");
        } else {
            s.extend_from_slice(b"resetchannels ");
            for c in &self.channels {
                s.push(b'&');
                s.extend_from_slice(c);
                s.push(b' ');
            }
        }
        s.extend_from_slice(self.describe_commands().as_bytes());
        s
    }

    /// Whether it allows everything: every command, key and channel.
    pub fn unrestricted(&self) -> bool {
        self.allcommands && self.allkeys && self.allchannels
    }
}
