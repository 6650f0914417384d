//! The command line: --version, --help, bad options refused at start with
//! a message naming them, and the example config file accepted.

use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(args)
        .output()
        .expect("run strata-server")
}

#[test]
fn version_and_help() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("strata-server "));
    let out = run(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for opt in [
        "maxmemory-ram",
        "flash-dir",
        "tiering-min-value-size",
        "proto-max-bulk-len",
    ] {
        assert!(help.contains(opt), "--help lacks {opt}");
    }
}

#[test]
fn bad_options_are_refused_naming_them() {
    for (args, needle) in [
        (&["--port", "notaport"][..], "port"),
        (&["--maxmemory-ram", "12q"][..], "maxmemory-ram"),
        (&["--no-such-option", "1"][..], "no-such-option"),
        (&["--maxmemory-policy", "sometimes"][..], "maxmemory-policy"),
    ] {
        let out = run(args);
        assert!(!out.status.success(), "{args:?} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("bad.conf");
    std::fs::write(&conf, "port 6379\nmaxmemory lots\n").unwrap();
    let out = run(&[conf.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("maxmemory"), "{err}");
}

#[test]
fn the_example_config_is_accepted_by_the_binary() {
    // A bad override after the example file is the error reported, which
    // shows the file itself parsed (the server is not left running).
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../strata.conf");
    let out = run(&[example, "--port", "bad"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--port"), "{err}");
}
