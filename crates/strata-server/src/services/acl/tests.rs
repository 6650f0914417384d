//! The rules, their descriptions and the checks, against Redis 7.0's.
use super::*;

fn rules(ops: &[&str]) -> Result<Rules, RuleError> {
    let mut r = Rules::new();
    for op in ops {
        r.apply(op.as_bytes())?;
    }
    Ok(r)
}

#[test]
fn describes_as_redis() {
    crate::commands::install();
    assert_eq!(rules(&[]).unwrap().describe(), "off resetchannels -@all");
    let d = Acl::default();
    assert_eq!(d.default.rules().describe(), "on nopass ~* &* +@all");
    let r = rules(&["on", ">p1", "~k*", "%R~r*", "&ch", "+get"]).unwrap();
    assert_eq!(
        r.describe(),
        "on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~k* %R~r* resetchannels &ch -@all +get"
    );
    let r = rules(&["reset"]).unwrap();
    assert_eq!(r.describe(), "off sanitize-payload resetchannels -@all");
    let r = rules(&["+@all", "-@dangerous"]).unwrap();
    assert_eq!(r.selectors[0].describe_commands(), "+@all -@dangerous");
}

#[test]
fn refuses_bad_rules_and_changes_nothing() {
    crate::commands::install();
    assert_eq!(rules(&["~*", "~a"]).err(), Some(RuleError::KeyAfterAll));
    assert_eq!(rules(&["+nosuchcommand"]).err(), Some(RuleError::Unknown));
    assert_eq!(rules(&["+@nosuch"]).err(), Some(RuleError::Unknown));
    assert_eq!(rules(&["#abc"]).err(), Some(RuleError::BadHash));
    assert_eq!(rules(&["<nope"]).err(), Some(RuleError::NoSuchPassword));
    assert_eq!(
        rules(&["+config|get|x"]).err(),
        Some(RuleError::SubFirstArg)
    );
    assert_eq!(rules(&["bogus"]).err(), Some(RuleError::Syntax));
    let acl = Acl::default();
    let ops = [Bytes::from_static(b"on"), Bytes::from_static(b"+bogus")];
    assert!(acl.set_user(b"u", &ops).is_err());
    assert!(acl.get(b"u").is_none());
}

#[test]
fn checks_commands_keys_and_channels() {
    crate::commands::install();
    let acl = Acl::default();
    let b = |s: &str| {
        s.split(' ')
            .map(|x| Bytes::copy_from_slice(x.as_bytes()))
            .collect::<Vec<_>>()
    };
    acl.set_user(
        b"u",
        &b("on nopass ~k* %R~r* &ch* +get +set +publish +config|get"),
    )
    .unwrap();
    let u = acl.get(b"u").unwrap();
    let run = |cmd: &str| {
        let args = b(cmd);
        let spec = crate::registry::lookup(&args[0]).unwrap();
        u.check(spec, &args)
    };
    assert_eq!(run("get k1"), Ok(()));
    assert_eq!(run("get r1"), Ok(()));
    assert_eq!(run("set r1 v"), Err(Denied::Key(1)));
    assert_eq!(run("get x"), Err(Denied::Key(1)));
    assert_eq!(run("del k1"), Err(Denied::Command));
    assert_eq!(run("publish chan m"), Ok(()));
    assert_eq!(run("publish other m"), Err(Denied::Channel(1)));
    assert_eq!(run("config get maxmemory"), Ok(()));
    assert_eq!(run("config set maxmemory 1"), Err(Denied::Command));
    assert!(acl.authenticate(b"u", b"anything").is_some());
    acl.set_user(b"u", &b("resetpass >pw")).unwrap();
    assert!(acl.authenticate(b"u", b"anything").is_none());
    assert!(acl.authenticate(b"u", b"pw").is_some());
    // A second selector allows what the root does not.
    acl.set_user(b"u", &b("(~x* +del)")).unwrap();
    assert_eq!(run("del x1"), Ok(()));
    assert_eq!(run("del k1"), Err(Denied::Key(1)));
}
