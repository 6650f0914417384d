//! User lines: the configuration's `user <name> <rules>...` lines, and the
//! ACL file (`aclfile`), as Redis 7.0's `ACLLoadFromFile` and
//! `ACLSaveToFile`: one such line per user (ACL LIST's lines).
//!
//! Invariants:
//! 1. ACL LOAD is all or nothing: every line is checked (syntax, rules,
//!    duplicates) before any user changes; on an error the users are as
//!    they were and the error names each bad line as `<path>:<n>: ...`.
//! 2. After a load the users are exactly the file's, the default user
//!    included (reset to Redis's defaults when the file has no line for
//!    it). Connections of every other user as it was are closed (its
//!    rules may have changed or it may be gone), as Redis frees the old
//!    users and their clients; the default user's connections stay.
//! 3. ACL SAVE writes a temporary file beside the target, syncs it and
//!    renames it over the target: a crash leaves the old file or the new
//!    one, never a part.

use super::{has_spaces, merge_selectors, Acl, Rules, User};
use bytes::Bytes;
use std::io::Write;
use std::sync::Arc;
use strata_protocol::split_args;

/// The users of an ACL file, each with its rules applied to a new user,
/// or Redis's errors (invariant 1), in `ACLLoadFromFile`'s words.
pub fn parse(text: &[u8], path: &str) -> Result<Vec<(Bytes, Rules)>, String> {
    let mut users: Vec<(Bytes, Rules)> = Vec::new();
    let mut errors = String::new();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let n = i + 1;
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        // (Bytes as sdssplitargs reads them: a pattern need not be UTF-8.)
        let Ok(words) = split_args(line) else {
            errors.push_str(&format!("{path}:{n}: Syntax error. "));
            continue;
        };
        if words.first().map(|w| &w[..]) != Some(b"user") || words.len() < 2 {
            errors.push_str(&format!(
                "{path}:{n} should start with user keyword followed by the username. "
            ));
            continue;
        }
        let name = words[1].clone();
        let shown = String::from_utf8_lossy(&name);
        if has_spaces(&name) {
            errors.push_str(&format!(
                "{path}:{n}: Usernames can't contain spaces or null characters. "
            ));
            continue;
        }
        if users.iter().any(|(u, _)| *u == name) {
            errors.push_str(&format!(
                "WARNING: Duplicate user '{shown}' found on line {n}. "
            ));
            continue;
        }
        match user_rules(&words[2..]) {
            Ok(rules) => users.push((name, rules)),
            Err(LineError::Op(op, message)) => errors.push_str(&format!(
                "{path}:{n}: Error in applying operation '{op}': {message}. "
            )),
            Err(LineError::Other(message)) => errors.push_str(&format!("{path}:{n}: {message}. ")),
        }
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        errors.push_str(
            "WARNING: ACL errors detected, no change to the previously active ACL rules was performed",
        );
        Err(errors)
    }
}

/// Checks a `user <name> <rules>...` configuration line: the error's
/// text (Redis's) if its name or a rule is wrong.
pub fn check_user_line(line: &[String]) -> Result<(), String> {
    let Some(name) = line.first() else {
        return Err("Wrong number of arguments".into());
    };
    if has_spaces(name.as_bytes()) {
        return Err("Usernames can't contain spaces or null characters".into());
    }
    let rules: Vec<Bytes> = line[1..].iter().map(|r| Bytes::from(r.clone())).collect();
    user_rules(&rules).map(drop).map_err(|e| match e {
        LineError::Op(op, message) => format!("Error in user declaration '{op}': {message}"),
        LineError::Other(message) => message,
    })
}

/// Why a user's rules do not apply: the rule and Redis's message, or a
/// message alone.
#[derive(Debug)]
pub(crate) enum LineError {
    Op(String, String),
    Other(String),
}

/// A user's rules (a `user` line after its name) applied to a new user,
/// which is off and may do nothing (`ACLCreateUser`).
pub(crate) fn user_rules(ops: &[Bytes]) -> Result<Rules, LineError> {
    let mut r = Rules::new();
    for op in merge_selectors(ops).map_err(LineError::Other)? {
        r.apply(&op).map_err(|e| {
            LineError::Op(
                String::from_utf8_lossy(&op).into_owned(),
                e.message().to_string(),
            )
        })?;
    }
    Ok(r)
}

/// An I/O error as C's `strerror` words it ("No such file or directory").
fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    text.split(" (os error")
        .next()
        .unwrap_or_default()
        .to_string()
}

impl Acl {
    /// ACL LOAD (and the start with `aclfile`): the users become the
    /// file's (invariants 1, 2). Returns the users replaced, whose
    /// connections the caller closes.
    pub fn load_file(&self, path: &str) -> Result<Vec<Arc<User>>, String> {
        let text = std::fs::read(path).map_err(|e| {
            format!(
                "Error loading ACLs, opening file '{path}': {}",
                strerror(&e)
            )
        })?;
        let lines = parse(&text, path)?;
        let fresh = Acl::default();
        let mut next = std::collections::BTreeMap::new();
        let mut default_rules = fresh.default.rules();
        for (name, rules) in lines {
            if name == self.default.name {
                default_rules = rules;
            } else {
                next.insert(name.clone(), Arc::new(User::new(name, rules)));
            }
        }
        let mut users = self.users.write();
        // The default user keeps its identity (connections hold it): its
        // rules are replaced.
        self.default.set_rules(default_rules);
        next.insert(self.default.name.clone(), self.default.clone());
        let old = std::mem::replace(&mut *users, next);
        Ok(old
            .into_values()
            .filter(|u| !Arc::ptr_eq(u, &self.default))
            .collect())
    }

    /// ACL SAVE: every user's ACL LIST line, written whole or not at all
    /// (invariant 3).
    pub fn save_file(&self, path: &str) -> std::io::Result<()> {
        // (Bytes: a pattern that is not UTF-8 is saved as it is.)
        let mut text = Vec::new();
        for u in self.users() {
            text.extend_from_slice(b"user ");
            text.extend_from_slice(&u.name);
            text.push(b' ');
            text.extend_from_slice(&u.rules().describe_bytes());
            text.push(b'\n');
        }
        let target = std::path::Path::new(path);
        // (A name of its own per save: two saves at once never share a
        // temporary file; the last rename wins whole.)
        static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let tmp = target.with_file_name(format!(
            ".{}.tmp-{}-{}",
            target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            std::process::id(),
            SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let written = (|| {
            let mut f = std::fs::File::options()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&tmp, target)?;
            if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_are_named_and_change_nothing() {
        crate::commands::install();
        let Err(err) = parse(
            b"user a on\n\nuser a off\nfoo bar\nuser b on +nosuch\n",
            "/x",
        ) else {
            panic!("bad lines parsed");
        };
        assert_eq!(
            err,
            "WARNING: Duplicate user 'a' found on line 3. /x:4 should start with user keyword \
             followed by the username. /x:5: Error in applying operation '+nosuch': Unknown \
             command or category name in ACL. WARNING: ACL errors detected, no change to the \
             previously active ACL rules was performed"
        );
        let acl = Acl::default();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.acl");
        std::fs::write(
            &path,
            "user alice on >pw ~* +@all\nuser bob on +get\nuser bob off\n",
        )
        .unwrap();
        assert!(acl.load_file(path.to_str().unwrap()).is_err());
        assert_eq!(acl.users().len(), 1, "a failed load changed the users");
    }

    #[test]
    fn save_then_load_gives_the_same_users() {
        crate::commands::install();
        let acl = Acl::default();
        acl.set_user(
            b"alice",
            &[">pw".into(), "on".into(), "~k*".into(), "+get".into()],
        )
        .unwrap();
        acl.set_user(b"default", &["resetpass".into(), ">dpw".into()])
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.acl");
        let path = path.to_str().unwrap();
        acl.save_file(path).unwrap();
        let lines = |a: &Acl| {
            a.users()
                .iter()
                .map(|u| {
                    format!(
                        "{} {}",
                        String::from_utf8_lossy(&u.name),
                        u.rules().describe()
                    )
                })
                .collect::<Vec<_>>()
        };
        let other = Acl::default();
        let replaced = other.load_file(path).unwrap();
        assert!(replaced.is_empty());
        assert_eq!(lines(&other), lines(&acl));
        let loaded = lines(&other);
        // Loading again replaces alice (her connections are to close) and
        // keeps the default user's identity.
        let default = other.default_user();
        let replaced = other.load_file(path).unwrap();
        assert_eq!(replaced.len(), 1);
        assert!(Arc::ptr_eq(&default, &other.default_user()));
        assert!(other.authenticate(b"default", b"dpw").is_some());
        assert_eq!(lines(&other), loaded);
        // A pattern that is not UTF-8 comes back as it was.
        acl.set_user(
            b"bin",
            &[
                "on".into(),
                Bytes::from_static(b"~\xff\xfe*"),
                "+get".into(),
            ],
        )
        .unwrap();
        acl.save_file(path).unwrap();
        other.load_file(path).unwrap();
        let bin = other.get(b"bin").unwrap().rules().describe_bytes();
        assert_eq!(bin, acl.get(b"bin").unwrap().rules().describe_bytes());
        assert!(bin.windows(4).any(|w| w == b"~\xff\xfe*"));
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
