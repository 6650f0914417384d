//! Fuzzes the ACL rule parser (ACL SETUSER's rules, `user` lines) and
//! checks invariants, not only the absence of panics:
//! - any rules either apply or are refused whole (the user as it was);
//! - a user's description (ACL LIST's rules) applied to a new user
//!   describes the same (ACL SAVE then ACL LOAD changes no user) —
//!   unless a key or channel pattern holds a parenthesis, which Redis
//!   7.0 accepts in a selector and then describes so that it does not
//!   parse back (`~y)`: redis-server answers the same), or `%RW~*` is
//!   followed by a pattern (described `~* %W~w`, which Redis then
//!   refuses to apply, as it refuses a pattern after `~*`).
//!
//! Input: rules separated by spaces (the first byte picks whether they
//! go to a new user or over an existing one).

use bytes::Bytes;
use strata_server::acl::Acl;

fn describe(acl: &Acl, name: &[u8]) -> Option<Vec<u8>> {
    acl.get(name).map(|u| u.rules().describe_bytes())
}

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
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
            let count = |c: u8| text.iter().filter(|&&b| b == c).count();
            if count(b'(') != count(b')') {
                return;
            }
            let words: Vec<Bytes> = text
                .split(|&b| b == b' ')
                .filter(|w| !w.is_empty())
                .map(Bytes::copy_from_slice)
                .collect();
            let fresh = Acl::default();
            if let Err(e) = fresh.set_user(b"u", &words) {
                if e.contains("Adding a pattern after the * pattern") {
                    return;
                }
            }
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
