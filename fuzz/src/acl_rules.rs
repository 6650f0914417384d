//! Fuzzes the ACL rule parser (ACL SETUSER's rules, `user` lines) and
//! checks invariants, not only the absence of panics:
//! - any rules either apply or are refused whole (the user as it was);
//! - a user's description (ACL LIST's rules) applied to a new user
//!   describes the same (ACL SAVE then ACL LOAD changes no user) — but
//!   for descriptions redis-server 7.0 cannot apply back either (checked
//!   against it; `quirky`): a key or channel pattern holding a
//!   parenthesis (`~y)`, `&a(b)` in a selector), `~*` beside other key
//!   patterns (`~k* %RW~*` is described `~k* ~*`, which applies as `~*`),
//!   or a pattern after it (`%RW~* %W~w`, refused as a pattern after
//!   `~*`), or a quote in a selector (Redis splits a selector with
//!   sdssplitargs and makes it empty where the split fails).
//!
//! Input: rules separated by spaces (the first byte picks whether they
//! go to a new user or over an existing one).

use bytes::Bytes;
use strata_server::services::acl::Acl;

fn describe(acl: &Acl, name: &[u8]) -> Option<Vec<u8>> {
    acl.get(name).map(|u| u.rules().describe_bytes())
}

/// Whether a description is one redis-server 7.0 cannot apply back
/// either (module doc).
fn quirky(text: &[u8]) -> bool {
    // A quote in a selector: Redis splits a selector with sdssplitargs,
    // which an unbalanced quote fails, and then makes the selector empty
    // (checked against redis-server 7.0.15).
    if let Some(open) = text.iter().position(|&b| b == b'(') {
        if text[open..].iter().any(|&b| b == b'\'' || b == b'"') {
            return true;
        }
    }
    let mut keys = 0;
    let mut all = false;
    for w in text.split(|&b| b == b' ') {
        let w = w.strip_prefix(b"(").unwrap_or(w);
        let key = w.starts_with(b"~") || w.starts_with(b"%");
        if key || w.starts_with(b"&") {
            if w.contains(&b'(') || w.contains(&b')') {
                return true;
            }
        }
        if key {
            keys += 1;
            all |= w == b"~*";
        }
    }
    all && keys > 1
}

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
    // The ACL table is the registry's commands (installed once).
    strata_server::commands::install();
    let Some((&selector, text)) = data.split_first() else {
        return;
    };
    let ops: Vec<Bytes> = text
        .split(|&b| b == b' ')
        .filter(|w| !w.is_empty())
        .map(Bytes::copy_from_slice)
        .collect();
    let acl = Acl::default();
    if selector & 1 == 1 {
        let base = ["on", ">pw", "~k*", "+get", "&ch"].map(|r| Bytes::from_static(r.as_bytes()));
        acl.set_user(b"u", &base).expect("base rules");
    }
    let before = describe(&acl, b"u");
    match acl.set_user(b"u", &ops) {
        Err(_) => assert_eq!(
            describe(&acl, b"u"),
            before,
            "a refused SETUSER changed the user"
        ),
        Ok(_) => {
            let text = describe(&acl, b"u").expect("the user exists");
            if quirky(&text) {
                return;
            }
            let words: Vec<Bytes> = text
                .split(|&b| b == b' ')
                .filter(|w| !w.is_empty())
                .map(Bytes::copy_from_slice)
                .collect();
            let fresh = Acl::default();
            fresh.set_user(b"u", &words).unwrap_or_else(|e| {
                panic!(
                    "its own description {:?} is refused: {e}",
                    String::from_utf8_lossy(&text)
                )
            });
            assert_eq!(describe(&fresh, b"u"), Some(text));
        }
    }
}
