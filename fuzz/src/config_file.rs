//! Fuzzes the configuration parser (redis.conf syntax, the options
//! table) and checks invariants, not only the absence of panics:
//! - any text either gives a configuration or an error naming a line;
//! - a configuration's options as CONFIG GET renders them, written back
//!   as a file, parse to the same configuration (CONFIG GET, CONFIG SET
//!   and the file agree on every option).

use strata_server::services::config::Config;

/// `sdscatrepr`-like quoting that `split_args` reads back.
fn quote(v: &str) -> String {
    let mut out = String::from("\"");
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// One input: the checks above.
pub fn fuzz(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // `user` lines name commands: the registry is read.
    strata_server::commands::install();
    let Ok(c) = Config::from_conf_str(text) else {
        return;
    };
    let mut again = String::new();
    for (name, value) in c.get_matching(b"*") {
        // (Options of several words are written as several arguments.)
        if matches!(
            name.as_str(),
            "bind" | "save" | "client-output-buffer-limit"
        ) {
            again.push_str(&format!("{name} {}\n", value_words(&value)));
        } else {
            again.push_str(&format!("{name} {}\n", quote(&value)));
        }
    }
    for u in &c.users {
        let words: Vec<String> = u.iter().map(|w| quote(w)).collect();
        again.push_str(&format!("user {}\n", words.join(" ")));
    }
    for (old, new) in &c.renames {
        again.push_str(&format!("rename-command {} {}\n", quote(old), quote(new)));
    }
    let c2 = Config::from_conf_str(&again)
        .unwrap_or_else(|e| panic!("its own rendering does not parse: {e}\n{again}"));
    assert_eq!(c2, c, "{again}");
}

fn value_words(v: &str) -> String {
    if v.is_empty() {
        return "\"\"".into();
    }
    v.split(' ').map(quote).collect::<Vec<_>>().join(" ")
}
