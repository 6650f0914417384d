//! ACL users, as Redis 7.0's `acl.c`: who a connection is, what it may
//! run, and the ACL LOG of what was refused. The ACL command itself is
//! `commands::server::acl`.
//!
//! Rooms: `table` (command ids and categories), `selector` (one set of
//! permissions, its rules, its check, its description), `log` (ACL LOG);
//! here the users, their flags and passwords, authentication and the
//! check of a command against a user.
//!
//! Invariants:
//! - A user is shared (`Arc<User>`) by the connections authenticated as
//!   it: ACL SETUSER changes what they may run from their next command,
//!   as in Redis; ACL DELUSER closes them.
//! - A user's `unrestricted` flag is true exactly when its root selector
//!   allows every command, key and channel; the request path then checks
//!   nothing else (one relaxed load: the default user costs nothing).
//! - Users are not persisted (Redis keeps them in its config or ACL
//!   file); `requirepass` sets the default user's password, as in Redis.

mod file;
pub use file::check_user_line;
mod log;
mod selector;
mod table;

pub use log::{now_ms, LogContext, LogEntry};
pub use selector::{Denied, RuleError, Selector};

use crate::registry::CommandSpec;
use crate::services::clients::ClientHandle;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use selector::Check;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// One user.
pub struct User {
    pub name: Bytes,
    rules: RwLock<Rules>,
    unrestricted: AtomicBool,
}

/// A user's flags, passwords and selectors (the root first).
#[derive(Clone)]
pub struct Rules {
    pub enabled: bool,
    pub nopass: bool,
    /// `sanitize-payload` (Some(true)) or `skip-sanitize-payload`.
    pub sanitize: Option<bool>,
    /// SHA-256 of each password, in lower-case hex.
    pub passwords: Vec<String>,
    pub selectors: Vec<Selector>,
}

fn hash(password: &[u8]) -> String {
    Sha256::digest(password)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// The hash a password rule names: of the clear text after `>` or `<`,
/// or given after `#` or `!`.
fn password_hash(op: &[u8]) -> Result<String, RuleError> {
    match op[0] {
        b'>' | b'<' => Ok(hash(&op[1..])),
        _ if valid_hash(&op[1..]) => Ok(String::from_utf8_lossy(&op[1..]).into_owned()),
        _ => Err(RuleError::BadHash),
    }
}

impl Rules {
    /// A new user's: off, no password, no permissions.
    fn new() -> Rules {
        Rules {
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            selectors: vec![Selector::new(true)],
        }
    }

    /// Applies one rule (`ACLSetUser`).
    fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if op.is_empty() {
            return Ok(());
        }
        let lower = op.to_ascii_lowercase();
        match &lower[..] {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"skip-sanitize-payload" => self.sanitize = Some(false),
            b"sanitize-payload" => self.sanitize = Some(true),
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"clearselectors" => self.selectors.truncate(1),
            b"reset" => {
                for r in [
                    &b"resetpass"[..],
                    b"resetkeys",
                    b"resetchannels",
                    b"off",
                    b"sanitize-payload",
                    b"clearselectors",
                    b"-@all",
                ] {
                    self.apply(r)?;
                }
            }
            _ => match op[0] {
                b'>' | b'#' => {
                    let h = password_hash(op)?;
                    if !self.passwords.contains(&h) {
                        self.passwords.push(h);
                    }
                    self.nopass = false;
                }
                b'<' | b'!' => {
                    let h = password_hash(op)?;
                    let at = self
                        .passwords
                        .iter()
                        .position(|p| *p == h)
                        .ok_or(RuleError::NoSuchPassword)?;
                    self.passwords.remove(at);
                }
                b'(' if op.ends_with(b")") => {
                    // Its rules split as Redis splits them (`sdssplitargs`).
                    // (Where the split fails, an unbalanced quote, Redis
                    // 7.0 makes the selector empty and says OK: so here.)
                    let parts =
                        strata_protocol::split_args(&op[1..op.len() - 1]).unwrap_or_default();
                    let mut s = Selector::new(false);
                    for part in parts {
                        s.apply(&part)?;
                    }
                    self.selectors.push(s);
                }
                _ => self.selectors[0].apply(op)?,
            },
        }
        Ok(())
    }

    /// The user as ACL LIST shows it, after `user <name> `
    /// (`ACLDescribeUser`).
    pub fn describe(&self) -> String {
        String::from_utf8_lossy(&self.describe_bytes()).into_owned()
    }

    /// `describe` with the patterns' bytes as given (ACL LIST, ACL SAVE:
    /// a pattern that is not UTF-8 must come back as it was).
    pub fn describe_bytes(&self) -> Vec<u8> {
        let mut words: Vec<Vec<u8>> = self.flags().iter().map(|f| f.as_bytes().to_vec()).collect();
        words.extend(self.passwords.iter().map(|p| format!("#{p}").into_bytes()));
        for (i, sel) in self.selectors.iter().enumerate() {
            words.push(if i == 0 {
                sel.describe()
            } else {
                [&b"("[..], &sel.describe(), b")"].concat()
            });
        }
        words.join(&b' ')
    }

    /// ACL GETUSER's flags, in Redis's order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize {
            Some(false) => f.push("skip-sanitize-payload"),
            Some(true) => f.push("sanitize-payload"),
            None => {}
        }
        f
    }
}

impl User {
    fn new(name: Bytes, rules: Rules) -> User {
        let u = User {
            name,
            rules: RwLock::new(Rules::new()),
            unrestricted: AtomicBool::new(false),
        };
        u.set_rules(rules);
        u
    }

    fn set_rules(&self, rules: Rules) {
        self.unrestricted
            .store(rules.selectors[0].unrestricted(), Relaxed);
        *self.rules.write() = rules;
    }

    pub fn rules(&self) -> Rules {
        self.rules.read().clone()
    }

    /// Whether the user may run the command `args` (of `spec`): the first
    /// selector that allows it decides; if none does, the highest ranked
    /// refusal (`ACLCheckAllUserCommandPerm`).
    pub fn check(&self, spec: &CommandSpec, args: &[Bytes]) -> Result<(), Denied> {
        if self.unrestricted.load(Relaxed) {
            return Ok(());
        }
        let t = table::table();
        let full = crate::registry::describe::full_name(spec.name, args);
        let Some(id) = t.id(full) else {
            return Ok(());
        };
        let channels = channels(spec.name, args);
        let find_keys = || crate::registry::describe::acl_keys(args).unwrap_or_default();
        let c = Check {
            id,
            no_auth: t.entry(id).no_auth,
            args,
            is_sub: t.entry(id).parent.is_some(),
            keys: &find_keys,
            channels: &channels,
        };
        let mut keys = None;
        let mut worst = Denied::Command;
        for s in &self.rules.read().selectors {
            match s.check(&c, &mut keys) {
                Ok(()) => return Ok(()),
                Err(d) => worst = worst.max(d),
            }
        }
        Err(worst)
    }

    /// Whether the user may use a channel (a pattern: PSUBSCRIBE's, matched
    /// literally).
    pub fn channel_ok(&self, channel: &[u8], pattern: bool) -> bool {
        self.unrestricted.load(Relaxed)
            || self
                .rules
                .read()
                .selectors
                .iter()
                .any(|s| s.channel_ok(channel, pattern))
    }
}

impl Denied {
    /// The refusal of a command a client sent (`processCommand`).
    pub fn error(self, full_name: &str) -> String {
        match self {
            Denied::Command => {
                format!("NOPERM this user has no permissions to run the '{full_name}' command")
            }
            Denied::Key(_) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .into()
            }
            Denied::Channel(_) => {
                "NOPERM this user has no permissions to access one of the channels used as arguments"
                    .into()
            }
        }
    }

    /// The refusal, at EXEC, of a command queued before the rules changed
    /// (`execCommand`).
    pub fn exec_error(self) -> String {
        let why = match self {
            Denied::Command => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        };
        format!("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {why}")
    }

    /// The refusal of a script's command (`getAclErrorMessage`).
    pub fn script_error(self) -> String {
        let why = match self {
            Denied::Command => "can't run this command or subcommand",
            Denied::Key(_) => {
                "can't access at least one of the keys mentioned in the command arguments"
            }
            Denied::Channel(_) => "can't publish to the channel mentioned in the command",
        };
        format!("ERR The user executing the script {why}")
    }

    fn reason(self) -> &'static str {
        match self {
            Denied::Command => "command",
            Denied::Key(_) => "key",
            Denied::Channel(_) => "channel",
        }
    }
}

/// The commands and subcommands in an ACL category (ACL CAT), None for
/// an unknown one.
pub fn category_commands(name: &str) -> Option<Vec<&'static str>> {
    let t = table::table();
    Some(t.in_category(t.category(name)?).collect())
}

/// The channels a command names, each with whether it is a pattern:
/// those it publishes to or subscribes to (`getChannelsFromCommand`;
/// unsubscribing needs no permission).
fn channels(name: &str, args: &[Bytes]) -> Vec<(usize, bool)> {
    match name {
        "publish" | "spublish" => vec![(1, false)],
        "subscribe" | "ssubscribe" => (1..args.len()).map(|i| (i, false)).collect(),
        "psubscribe" => (1..args.len()).map(|i| (i, true)).collect(),
        _ => Vec::new(),
    }
}

/// The users and the ACL LOG.
pub struct Acl {
    users: RwLock<BTreeMap<Bytes, Arc<User>>>,
    default: Arc<User>,
    pub log: log::AclLog,
    /// The `requirepass` last given to the default user.
    requirepass: Mutex<Option<String>>,
}

impl Default for Acl {
    fn default() -> Acl {
        let mut rules = Rules::new();
        for r in ["+@all", "~*", "&*", "on", "nopass"] {
            rules.apply(r.as_bytes()).expect("the default user's rules");
        }
        let default = Arc::new(User::new(Bytes::from_static(b"default"), rules));
        let mut users = BTreeMap::new();
        users.insert(default.name.clone(), default.clone());
        Acl {
            users: RwLock::new(users),
            default,
            log: log::AclLog::default(),
            requirepass: Mutex::new(None),
        }
    }
}

impl Acl {
    pub fn default_user(&self) -> Arc<User> {
        self.default.clone()
    }

    /// Whether a new connection is authenticated at once: the default
    /// user needs no password and is on.
    pub fn auto_auth(&self) -> bool {
        let r = self.default.rules.read();
        r.nopass && r.enabled
    }

    /// Whether the default user needs no password (`USER_FLAG_NOPASS`):
    /// what protected mode and the pre-AUTH limits look at.
    pub fn default_nopass(&self) -> bool {
        self.default.rules.read().nopass
    }

    /// Whether anyone must authenticate to run commands: the default user
    /// has a password or is off, or other users exist (memcached's port,
    /// which has no authentication, would bypass them).
    pub fn guarded(&self) -> bool {
        !self.auto_auth() || self.users.read().len() > 1
    }

    /// `requirepass` changed: the default user's passwords follow
    /// (`ACLUpdateDefaultUserPassword`), only when it changed.
    pub fn set_requirepass(&self, pass: Option<&str>) {
        let mut last = self.requirepass.lock();
        if last.as_deref() == pass {
            return;
        }
        *last = pass.map(str::to_string);
        let mut rules = self.default.rules();
        rules.apply(b"resetpass").ok();
        match pass {
            Some(p) => rules.apply(format!(">{p}").as_bytes()).ok(),
            None => rules.apply(b"nopass").ok(),
        };
        self.default.set_rules(rules);
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// The users, by name.
    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// The user whose name and password these are, if it is on
    /// (`ACLCheckUserCredentials`).
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        let u = self.get(name)?;
        let r = u.rules.read();
        if !r.enabled {
            return None;
        }
        if !r.nopass {
            let h = hash(password);
            // (Compared in full every time, as Redis's constant-time compare.)
            let ok = r.passwords.iter().fold(false, |ok, p| {
                ok | (p
                    .as_bytes()
                    .iter()
                    .zip(h.as_bytes())
                    .fold(0, |d, (a, b)| d | (a ^ b))
                    == 0)
            });
            if !ok {
                return None;
            }
        }
        drop(r);
        Some(u)
    }

    /// ACL SETUSER: creates or changes a user with all the rules, or none
    /// of them if one is wrong (`ACLStringSetUser`). Returns the error's
    /// text, and the user as it was (for the caller to act on its
    /// connections) on success.
    pub fn set_user(
        &self,
        name: &[u8],
        ops: &[Bytes],
    ) -> Result<Option<(Arc<User>, Rules)>, String> {
        let ops = merge_selectors(ops)?;
        let existing = self.get(name);
        let mut rules = existing.as_ref().map_or_else(Rules::new, |u| u.rules());
        for op in &ops {
            if let Err(e) = rules.apply(op) {
                return Err(format!(
                    "ERR Error in ACL SETUSER modifier '{}': {}",
                    String::from_utf8_lossy(op),
                    e.message()
                ));
            }
        }
        match existing {
            Some(u) => {
                let before = u.rules();
                u.set_rules(rules);
                Ok(Some((u, before)))
            }
            None => {
                let name = Bytes::copy_from_slice(name);
                let u = Arc::new(User::new(name.clone(), rules));
                self.users.write().insert(name, u);
                Ok(None)
            }
        }
    }

    /// Whether the connection's user may run the command; a refusal is
    /// logged in the ACL LOG as made in `context`.
    pub fn allows(
        &self,
        user: &User,
        client: &ClientHandle,
        spec: &CommandSpec,
        args: &[Bytes],
        context: LogContext,
    ) -> Result<(), Denied> {
        user.check(spec, args).inspect_err(|&denied| {
            let full = crate::registry::describe::full_name(spec.name, args);
            self.log_refusal(user, client, args, full, denied, context);
        })
    }

    /// Logs a refused command (`addACLLogEntry`).
    fn log_refusal(
        &self,
        user: &User,
        client: &ClientHandle,
        args: &[Bytes],
        full_name: &str,
        denied: Denied,
        context: LogContext,
    ) {
        let object = match denied {
            Denied::Command => full_name.as_bytes().to_vec(),
            Denied::Key(i) | Denied::Channel(i) => args[i].to_vec(),
        };
        self.log.add(LogEntry {
            count: 1,
            reason: denied.reason(),
            context,
            object,
            username: user.name.to_vec(),
            ctime: log::now_ms(),
            client_info: client.list_line(),
        });
    }

    /// Logs a failed AUTH or HELLO AUTH: the command's name as sent, the
    /// user name tried.
    pub fn log_auth_failure(
        &self,
        client: &ClientHandle,
        context: LogContext,
        command: &[u8],
        user: &[u8],
    ) {
        self.log.add(LogEntry {
            count: 1,
            reason: "auth",
            context,
            object: command.to_vec(),
            username: user.to_vec(),
            ctime: log::now_ms(),
            client_info: client.list_line(),
        });
    }

    /// A `user <name> <rules>...` line of the configuration (checked by
    /// `check_user_line` when the file was read): creates the user, or
    /// resets the default user and gives it these rules
    /// (`ACLLoadConfiguredUsers`).
    pub fn load_user(&self, line: &[String]) -> Result<(), String> {
        let (name, rules) = line.split_first().ok_or("a user line needs a name")?;
        let mut ops: Vec<Bytes> = rules.iter().map(|r| Bytes::from(r.clone())).collect();
        if name == "default" {
            ops.insert(0, Bytes::from_static(b"reset"));
        }
        self.set_user(name.as_bytes(), &ops).map(drop)
    }

    /// ACL DELUSER of one user: the removed user (its connections are to
    /// be closed by the caller).
    pub fn remove(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.write().remove(name)
    }
}

/// Whether a name or pattern holds a space or a NUL, which ACL refuses
/// (`ACLStringHasSpaces`).
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|c| c.is_ascii_whitespace() || *c == 0)
}

/// Joins the arguments of a selector given in parts (`(~x*` `+get)`)
/// into one (`ACLMergeSelectorArguments`).
fn merge_selectors(ops: &[Bytes]) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut open: Option<(Vec<u8>, &Bytes)> = None;
    for op in ops {
        if let Some((sel, _)) = open.as_mut() {
            // (Redis appends the later parts with `%s`: each up to its
            // first NUL byte.)
            sel.push(b' ');
            sel.extend_from_slice(op.split(|&b| b == 0).next().unwrap_or_default());
            if op.ends_with(b")") {
                out.push(open.take().map(|(s, _)| s).unwrap_or_default());
            }
            continue;
        }
        if op.starts_with(b"(") && !op.ends_with(b")") {
            open = Some((op.to_vec(), op));
            continue;
        }
        out.push(op.to_vec());
    }
    if let Some((_, first)) = open {
        return Err(format!(
            "ERR Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(first)
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
