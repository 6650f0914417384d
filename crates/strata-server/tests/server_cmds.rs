//! Connection and server commands against the real server, with Redis 7
//! as the reference: PING ECHO HELLO AUTH CLIENT COMMAND CONFIG INFO
//! SLOWLOG OBJECT MEMORY DEBUG TIME LASTSAVE QUIT RESET.

mod common;
use common::raw::Raw;
use common::*;

use std::io::Write;
use strata_protocol::Frame;

fn bulk(f: &Frame) -> String {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Verbatim { data, .. } => String::from_utf8_lossy(data).into_owned(),
        other => panic!("not a string: {other:?}"),
    }
}

fn int(f: &Frame) -> i64 {
    match f {
        Frame::Integer(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

fn array(f: Frame) -> Vec<Frame> {
    match f {
        Frame::Array(v) | Frame::Set(v) => v,
        other => panic!("not an array: {other:?}"),
    }
}

/// A RESP2 flat key/value array or a RESP3 map, as pairs.
fn pairs(f: Frame) -> Vec<(String, Frame)> {
    match f {
        Frame::Map(m) => m.into_iter().map(|(k, v)| (bulk(&k), v)).collect(),
        Frame::Array(v) => v.chunks(2).map(|p| (bulk(&p[0]), p[1].clone())).collect(),
        other => panic!("not a map: {other:?}"),
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn ping_and_echo() {
    let srv = start();
    let mut r = Raw::new(&srv);
    // PING without argument: +PONG; with one: the argument as a bulk.
    r.w("PING", "+PONG\r\n");
    r.w("ping hello", "$5\r\nhello\r\n");
    r.w(
        "PING a b",
        "-ERR wrong number of arguments for 'ping' command\r\n",
    );
    // ECHO is binary safe.
    r.send(&[b"ECHO", b"a\0b\r\n"]);
    assert_eq!(
        r.frame(),
        Frame::Bulk(bytes::Bytes::from_static(b"a\0b\r\n"))
    );
    r.w(
        "ECHO",
        "-ERR wrong number of arguments for 'echo' command\r\n",
    );
    r.w(
        "ECHO a b",
        "-ERR wrong number of arguments for 'echo' command\r\n",
    );
}

#[test]
fn hello_negotiates_protocol() {
    let srv = start();
    let mut r = Raw::new(&srv);
    let id = int(&r.cmd("CLIENT ID"));
    // HELLO 3 switches to RESP3 and answers with a 7-entry map.
    let reply = r.cmd("HELLO 3");
    assert!(matches!(reply, Frame::Map(_)), "{reply:?}");
    let m = pairs(reply);
    let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        ["server", "version", "proto", "id", "mode", "role", "modules"]
    );
    assert_eq!(bulk(&m[0].1), "redis");
    assert!(bulk(&m[1].1).starts_with("7."), "{:?}", m[1].1);
    assert_eq!(int(&m[2].1), 3);
    assert_eq!(int(&m[3].1), id);
    assert_eq!(bulk(&m[4].1), "standalone");
    assert_eq!(bulk(&m[5].1), "master");
    assert_eq!(m[6].1, Frame::Array(vec![]));
    // In RESP3, a missing key is `_`.
    r.w("GET missing", "_\r\n");
    // HELLO without a version keeps the current one.
    let m = pairs(r.cmd("HELLO"));
    assert_eq!(int(&m[2].1), 3);
    // Unsupported versions: NOPROTO, the protocol is unchanged.
    r.w("HELLO 4", "-NOPROTO unsupported protocol version\r\n");
    r.w("HELLO 1", "-NOPROTO unsupported protocol version\r\n");
    r.w(
        "HELLO abc",
        "-ERR Protocol version is not an integer or out of range\r\n",
    );
    r.w("GET missing", "_\r\n");
    // HELLO 2 SETNAME: back to RESP2 (a flat array), with a name.
    let reply = r.cmd("HELLO 2 SETNAME conn-a");
    assert!(
        matches!(&reply, Frame::Array(v) if v.len() == 14),
        "{reply:?}"
    );
    r.w("CLIENT GETNAME", "$6\r\nconn-a\r\n");
    r.w("GET missing", "$-1\r\n");
    // HELLO AUTH: the default user has no password unless requirepass.
    let m = pairs(r.cmd("HELLO 3 AUTH default anything"));
    assert_eq!(int(&m[2].1), 3);
    r.w(
        "HELLO 3 AUTH someone pass",
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    r.w(
        "HELLO 3 BADOPT",
        "-ERR Syntax error in HELLO option 'BADOPT'\r\n",
    );
    // Plain AUTH without requirepass (Redis 7 wording).
    r.w("AUTH x", "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n");
    r.w("AUTH default x", "+OK\r\n");
}

#[test]
fn auth_with_requirepass() {
    let srv = Server::start(&["--maxmemory-ram", "16mb", "--requirepass", "s3cret"]);
    let mut r = Raw::new(&srv);
    let wrong = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    r.w("AUTH nope", wrong);
    r.w("AUTH default nope", wrong);
    r.w("AUTH s3cret", "+OK\r\n");
    r.w("AUTH default s3cret", "+OK\r\n");
    r.w("AUTH a b c", "-ERR syntax error\r\n");
    r.w("HELLO 2 AUTH default nope", wrong);
    let m = pairs(r.cmd("HELLO 2 AUTH default s3cret"));
    assert_eq!(int(&m[2].1), 2);
}

#[test]
fn client_id_name_list_info() {
    let srv = start();
    let mut r = Raw::new(&srv);
    let id = int(&r.cmd("CLIENT ID"));
    assert!(id > 0);
    // Without a name: nil. With one: the name.
    r.w("CLIENT GETNAME", "$-1\r\n");
    r.w("CLIENT SETNAME worker-1", "+OK\r\n");
    r.w("CLIENT GETNAME", "$8\r\nworker-1\r\n");
    // Names cannot hold spaces or control characters.
    r.send(&[b"CLIENT", b"SETNAME", b"bad name"]);
    assert_eq!(
        r.frame(),
        Frame::Error(
            "ERR Client names cannot contain spaces, newlines or special characters.".into()
        )
    );
    r.send(&[b"CLIENT", b"SETNAME", b"bad\nname"]);
    assert!(matches!(r.frame(), Frame::Error(_)));
    r.w("CLIENT GETNAME", "$8\r\nworker-1\r\n");
    // An empty name clears it.
    r.send(&[b"CLIENT", b"SETNAME", b""]);
    assert_eq!(r.frame(), Frame::Simple("OK".into()));
    r.w("CLIENT GETNAME", "$-1\r\n");
    r.w("CLIENT SETNAME worker-1", "+OK\r\n");
    // CLIENT SETINFO lib-name / lib-ver show in CLIENT INFO.
    r.w("CLIENT SETINFO lib-name mylib", "+OK\r\n");
    r.w("CLIENT SETINFO LIB-VER 1.2.3", "+OK\r\n");
    r.w(
        "CLIENT SETINFO color blue",
        "-ERR Unrecognized option 'color'\r\n",
    );
    r.send(&[b"CLIENT", b"SETINFO", b"lib-name", b"a b"]);
    assert!(matches!(r.frame(), Frame::Error(_)));
    // CLIENT INFO: this connection's line.
    let info = bulk(&r.cmd("CLIENT INFO"));
    assert!(info.ends_with('\n'), "{info:?}");
    let fields: std::collections::HashMap<&str, &str> = info
        .trim_end()
        .split(' ')
        .filter_map(|f| f.split_once('='))
        .collect();
    assert_eq!(fields["id"], id.to_string());
    assert_eq!(fields["name"], "worker-1");
    assert_eq!(fields["lib-name"], "mylib");
    assert_eq!(fields["lib-ver"], "1.2.3");
    assert_eq!(fields["db"], "0");
    assert_eq!(fields["cmd"], "client|info");
    assert!(fields["addr"].starts_with("127.0.0.1:"));
    // CLIENT LIST: one line per connection, ours included.
    let mut other = Raw::new(&srv);
    let other_id = int(&other.cmd("CLIENT ID"));
    let list = bulk(&r.cmd("CLIENT LIST"));
    let ids: Vec<String> = list
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert!(ids.contains(&format!("id={id}")), "{list}");
    assert!(ids.contains(&format!("id={other_id}")), "{list}");
    assert!(list.contains("name=worker-1"));
    // Filters: by id (in the order asked; unknown ids skipped), by type (a
    // subscriber is `pubsub`, flag P, with its counts); Redis's errors.
    let ids_of = |list: String| -> Vec<String> {
        list.lines()
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect()
    };
    let list = bulk(&r.cmd(&format!("CLIENT LIST ID {other_id} 99999 {id}")));
    assert_eq!(ids_of(list), [format!("id={other_id}"), format!("id={id}")]);
    other.send(&[b"SUBSCRIBE", b"a", b"b"]);
    other.frame();
    other.frame();
    other.send(&[b"PSUBSCRIBE", b"x*"]);
    other.frame();
    let list = bulk(&r.cmd("CLIENT LIST TYPE pubsub"));
    assert_eq!(ids_of(list.clone()), [format!("id={other_id}")]);
    assert!(
        list.contains(" flags=P ") && list.contains(" sub=2 psub=1 ssub=0 "),
        "{list}"
    );
    let list = bulk(&r.cmd("CLIENT LIST TYPE normal"));
    assert!(ids_of(list.clone()).contains(&format!("id={id}")), "{list}");
    assert!(!ids_of(list).contains(&format!("id={other_id}")));
    assert_eq!(bulk(&r.cmd("CLIENT LIST TYPE replica")), "");
    r.w("CLIENT LIST TYPE foo", "-ERR Unknown client type 'foo'\r\n");
    r.w("CLIENT LIST ID x", "-ERR Invalid client ID\r\n");
    r.w("CLIENT LIST foo", "-ERR syntax error\r\n");
    // CLIENT KILL TYPE pubsub closes the subscriber only.
    assert_eq!(int(&r.cmd("CLIENT KILL TYPE pubsub")), 1);
    // Unknown subcommands (Redis wording) and wrong arities.
    r.w(
        "CLIENT FOO",
        "-ERR unknown subcommand 'FOO'. Try CLIENT HELP.\r\n",
    );
    r.w(
        "CLIENT",
        "-ERR wrong number of arguments for 'client' command\r\n",
    );
    // A known subcommand with a wrong arity names `client|<sub>`.
    r.w(
        "CLIENT SETNAME",
        "-ERR wrong number of arguments for 'client|setname' command\r\n",
    );
    r.w(
        "CLIENT KILL",
        "-ERR wrong number of arguments for 'client|kill' command\r\n",
    );
    r.w(
        "CLIENT ID extra",
        "-ERR wrong number of arguments for 'client|id' command\r\n",
    );
    assert!(matches!(r.cmd("CLIENT HELP"), Frame::Array(_)));
}

#[test]
fn client_kill_closes_other_connection() {
    let srv = start();
    let mut r = Raw::new(&srv);
    // New form by ID: the count of killed clients.
    let mut victim = Raw::new(&srv);
    let vid = int(&victim.cmd("CLIENT ID"));
    assert_eq!(int(&r.cmd(&format!("CLIENT KILL ID {vid}"))), 1);
    assert!(victim.closed(), "killed connection still open");
    // The killer is unaffected; a second kill finds nobody.
    assert_eq!(int(&r.cmd(&format!("CLIENT KILL ID {vid}"))), 0);
    // Old form by address: +OK.
    let mut victim = Raw::new(&srv);
    victim.w("PING", "+PONG\r\n");
    let addr = victim.s.local_addr().unwrap().to_string();
    r.w(&format!("CLIENT KILL {addr}"), "+OK\r\n");
    assert!(victim.closed());
    r.w("CLIENT KILL 10.9.9.9:1", "-ERR No such client\r\n");
    // New form by ADDR.
    let mut victim = Raw::new(&srv);
    victim.w("PING", "+PONG\r\n");
    let addr = victim.s.local_addr().unwrap().to_string();
    r.w(&format!("CLIENT KILL ADDR {addr}"), ":1\r\n");
    assert!(victim.closed());
    // SKIPME yes (the default) spares the caller.
    let my_id = int(&r.cmd("CLIENT ID"));
    r.w(&format!("CLIENT KILL ID {my_id}"), ":0\r\n");
    r.w(
        "CLIENT KILL ID 0",
        "-ERR client-id should be greater than 0\r\n",
    );
    r.w("CLIENT KILL ID 1 FOO bar", "-ERR syntax error\r\n");
    r.w("PING", "+PONG\r\n");
    // SKIPME no kills the caller too.
    r.w(&format!("CLIENT KILL ID {my_id} SKIPME no"), ":1\r\n");
    assert!(r.closed());
    let mut fresh = Raw::new(&srv);
    fresh.w("PING", "+PONG\r\n");
}

#[test]
fn command_count_info_docs_list_getkeys() {
    let srv = start();
    let mut r = Raw::new(&srv);
    // COMMAND COUNT equals the number of entries of COMMAND and of the
    // commands in COMMAND LIST (which lists subcommands too, as Redis 7).
    let count = int(&r.cmd("COMMAND COUNT"));
    let all = array(r.cmd("COMMAND"));
    assert_eq!(all.len() as i64, count);
    let list = array(r.cmd("COMMAND LIST"));
    let names: Vec<String> = list.iter().map(bulk).collect();
    assert_eq!(
        names.iter().filter(|n| !n.contains('|')).count() as i64,
        count
    );
    assert!(names.iter().any(|x| x == "client|list"));
    for n in ["get", "set", "scan", "client", "debug", "incrbyfloat"] {
        assert!(
            names.iter().any(|x| x == n),
            "{n} missing from COMMAND LIST"
        );
    }
    // COMMAND INFO get: the Redis 7 ten-field shape.
    let info = array(r.cmd("COMMAND INFO get"));
    assert_eq!(info.len(), 1);
    let get = array(info[0].clone());
    assert_eq!(get.len(), 10);
    assert_eq!(bulk(&get[0]), "get");
    assert_eq!(int(&get[1]), 2);
    let flags: Vec<String> = array(get[2].clone()).iter().map(bulk).collect();
    assert!(flags.contains(&"readonly".to_string()), "{flags:?}");
    assert_eq!((int(&get[3]), int(&get[4]), int(&get[5])), (1, 1, 1));
    let cats: Vec<String> = array(get[6].clone()).iter().map(bulk).collect();
    assert!(cats.iter().all(|c| c.starts_with('@')), "{cats:?}");
    // Negative arity for variadic commands; unknown names are nil.
    let info = array(r.cmd("COMMAND INFO set nosuchcmd MSET"));
    assert_eq!(info.len(), 3);
    assert_eq!(int(&array(info[0].clone())[1]), -3);
    assert_eq!(info[1], Frame::Null);
    let mset = array(info[2].clone());
    assert_eq!((int(&mset[3]), int(&mset[4]), int(&mset[5])), (1, -1, 2));
    // COMMAND DOCS: a map of name to a map with summary/since/group.
    let docs = pairs(r.cmd("COMMAND DOCS get"));
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].0, "get");
    let doc = pairs(docs[0].1.clone());
    let summary = doc.iter().find(|(k, _)| k == "summary").expect("summary");
    assert!(!bulk(&summary.1).is_empty());
    let group = doc.iter().find(|(k, _)| k == "group").expect("group");
    assert_eq!(bulk(&group.1), "string");
    let all_docs = pairs(r.cmd("COMMAND DOCS"));
    assert_eq!(all_docs.len() as i64, count);
    // COMMAND GETKEYS.
    let keys = |r: &mut Raw, c: &str| -> Vec<String> { array(r.cmd(c)).iter().map(bulk).collect() };
    assert_eq!(keys(&mut r, "COMMAND GETKEYS SET a b"), ["a"]);
    assert_eq!(keys(&mut r, "COMMAND GETKEYS MSET a 1 b 2"), ["a", "b"]);
    assert_eq!(keys(&mut r, "COMMAND GETKEYS DEL x y z"), ["x", "y", "z"]);
    assert_eq!(keys(&mut r, "COMMAND GETKEYS RENAME s d"), ["s", "d"]);
    r.w(
        "COMMAND GETKEYS PING x",
        "-ERR The command has no key arguments\r\n",
    );
    r.w(
        "COMMAND GETKEYS GET a b",
        "-ERR Invalid number of arguments specified for command\r\n",
    );
    r.w(
        "COMMAND GETKEYS GET",
        "-ERR wrong number of arguments for 'command|getkeys' command\r\n",
    );
    r.w(
        "COMMAND GETKEYS NOSUCH a",
        "-ERR Invalid command specified\r\n",
    );
    r.w(
        "COMMAND FOO",
        "-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n",
    );
}

#[test]
fn config_get_set_and_refusals() {
    let srv = start();
    let mut con = srv.client();
    let mut r = Raw::new(&srv);
    // CONFIG GET with a glob: every maxmemory option, as name/value pairs.
    let got: Vec<(String, String)> = q(&mut con, "CONFIG GET maxmemory*");
    let names: Vec<&str> = got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "maxmemory",
            "maxmemory-ram",
            "maxmemory-clients",
            "maxmemory-policy",
            "maxmemory-samples"
        ]
    );
    assert_eq!(got[1].1, (16u64 << 20).to_string());
    // Several patterns; duplicates are reported once; no match is empty.
    let got: Vec<(String, String)> = q(&mut con, "CONFIG GET hz HZ databases");
    assert_eq!(got.len(), 2);
    assert_eq!(got[1], ("databases".to_string(), "16".to_string()));
    r.w("CONFIG GET nosuchoption", "*0\r\n");
    // CONFIG SET of a runtime option takes effect.
    r.w("CONFIG SET maxmemory-policy allkeys-lru", "+OK\r\n");
    let got: Vec<(String, String)> = q(&mut con, "CONFIG GET maxmemory-policy");
    assert_eq!(got[0].1, "allkeys-lru");
    r.w("CONFIG SET hz 20 slowlog-max-len 64", "+OK\r\n");
    let got: Vec<(String, String)> = q(&mut con, "CONFIG GET hz");
    assert_eq!(got[0].1, "20");
    // Immutable and unknown options (Redis wording).
    r.w(
        "CONFIG SET port 7000",
        "-ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config\r\n",
    );
    r.w(
        "CONFIG SET databases 4",
        "-ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config\r\n",
    );
    r.w(
        "CONFIG SET nosuchoption 1",
        "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuchoption'\r\n",
    );
    // A bad value names the option.
    let e = r.cmd("CONFIG SET hz notanumber");
    let Frame::Error(text) = e else {
        panic!("{e:?}")
    };
    assert!(
        text.starts_with(b"ERR CONFIG SET failed (possibly related to argument 'hz') - "),
        "{text:?}"
    );
    // All or nothing: a failing pair leaves the earlier ones unapplied.
    assert!(matches!(r.cmd("CONFIG SET hz 30 port 1"), Frame::Error(_)));
    let got: Vec<(String, String)> = q(&mut con, "CONFIG GET hz");
    assert_eq!(got[0].1, "20");
    // Arity.
    r.w(
        "CONFIG SET hz",
        "-ERR wrong number of arguments for 'config|set' command\r\n",
    );
    r.w(
        "CONFIG GET",
        "-ERR wrong number of arguments for 'config|get' command\r\n",
    );
    r.w(
        "CONFIG FOO",
        "-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n",
    );
}

#[test]
fn config_resetstat_zeroes_counters() {
    let srv = start();
    let mut con = srv.client();
    for _ in 0..20 {
        let _: String = q(&mut con, "PING");
    }
    let before = srv.info_u64(&mut con, "stats", "total_commands_processed");
    assert!(before >= 20, "{before}");
    let _: () = q(&mut con, "CONFIG RESETSTAT");
    // Only the INFO itself (and at most RESETSTAT) counted since.
    let after = srv.info_u64(&mut con, "stats", "total_commands_processed");
    assert!(after <= 2, "after RESETSTAT: {after}");
    assert_eq!(srv.info_u64(&mut con, "stats", "keyspace_misses"), 0);
}

#[test]
fn info_sections() {
    let srv = start();
    let mut con = srv.client();
    let text: String = q(&mut con, "INFO");
    // The default sections, in order, with Redis-compatible versions.
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with('#')).collect();
    assert_eq!(
        headers,
        [
            "# Server",
            "# Clients",
            "# Memory",
            "# Persistence",
            "# Stats",
            "# Replication",
            "# CPU",
            "# Errorstats",
            "# Keyspace",
            "# Tiered"
        ]
    );
    assert!(text.contains("\r\nredis_version:7."), "{text}");
    assert!(text.contains("\r\nstrata_version:"));
    // `all` and `everything` are the same set, `default` that set but the
    // per-command sections (as Redis); sections are case-insensitive.
    for (arg, n) in [("all", 12), ("everything", 12), ("default", 10)] {
        let t: String = q(&mut con, &format!("INFO {arg}"));
        assert_eq!(t.lines().filter(|l| l.starts_with('#')).count(), n, "{arg}");
    }
    let t: String = q(&mut con, "INFO SERVER");
    assert_eq!(
        t.lines().filter(|l| l.starts_with('#')).collect::<Vec<_>>(),
        ["# Server"]
    );
    let t: String = q(&mut con, "INFO clients memory");
    assert_eq!(
        t.lines().filter(|l| l.starts_with('#')).collect::<Vec<_>>(),
        ["# Clients", "# Memory"]
    );
    // A few fields clients rely on.
    assert!(srv.info_u64(&mut con, "clients", "connected_clients") >= 1);
    assert_eq!(srv.info_u64(&mut con, "memory", "maxmemory_ram"), 16 << 20);
    assert!(srv.info(&mut con, "server").contains_key("tcp_port"));
    // CPU: measured (the server has done some work), as Redis prints it.
    let cpu = srv.info(&mut con, "cpu");
    let user: f64 = cpu["used_cpu_user"].parse().unwrap();
    let sys: f64 = cpu["used_cpu_sys"].parse().unwrap();
    assert!(user + sys > 0.0, "{cpu:?}");
    assert!(cpu["used_cpu_user"].split_once('.').unwrap().1.len() == 6);
    assert!(cpu.contains_key("used_cpu_sys_children"));
    // INFO nosuch: an empty text, not an error.
    let t: String = q(&mut con, "INFO nosuchsection");
    assert!(!t.contains('#'));
}

#[test]
fn slowlog_get_len_reset() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("CONFIG SET slowlog-log-slower-than 0", "+OK\r\n");
    r.w("SET slow-key v", "+OK\r\n");
    let len = int(&r.cmd("SLOWLOG LEN"));
    assert!(len > 0, "{len}");
    // GET 1: the newest entry, six fields as in Redis 7.
    let entries = array(r.cmd("SLOWLOG GET 1"));
    assert_eq!(entries.len(), 1);
    let e = array(entries[0].clone());
    assert_eq!(e.len(), 6);
    let (id, ts, micros) = (int(&e[0]), int(&e[1]), int(&e[2]));
    assert!(id >= 0 && micros >= 0);
    assert!((ts - now_secs()).abs() < 60, "timestamp {ts}");
    let args: Vec<String> = array(e[3].clone()).iter().map(bulk).collect();
    assert_eq!(args, ["SLOWLOG", "LEN"]);
    assert!(bulk(&e[4]).starts_with("127.0.0.1:"));
    bulk(&e[5]);
    // Newest first; GET -1 returns everything.
    let all = array(r.cmd("SLOWLOG GET -1"));
    assert!(all.len() >= 3);
    let ids: Vec<i64> = all.iter().map(|e| int(&array(e.clone())[0])).collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    let has_set = all.iter().any(|e| {
        let args: Vec<String> = array(array(e.clone())[3].clone())
            .iter()
            .map(bulk)
            .collect();
        args == ["SET", "slow-key", "v"]
    });
    assert!(has_set);
    r.w(
        "SLOWLOG GET -2",
        "-ERR count should be greater than or equal to -1\r\n",
    );
    // Stop logging, then RESET empties the log.
    r.w("CONFIG SET slowlog-log-slower-than -1", "+OK\r\n");
    r.w("SLOWLOG RESET", "+OK\r\n");
    r.w("SLOWLOG LEN", ":0\r\n");
    r.w("SLOWLOG GET", "*0\r\n");
}

/// A command whose reply comes later is logged when it comes, with the
/// time it took (DEBUG SLEEP; a cold read), and a blocked command when it
/// is served, without its wait: as Redis's slowlog.
#[test]
fn slowlog_logs_replies_that_come_later() {
    let srv = Server::start(&["--enable-debug-command", "yes"]);
    let mut r = Raw::new(&srv);
    r.w("CONFIG SET slowlog-log-slower-than 100000", "+OK\r\n");
    r.w("SLOWLOG RESET", "+OK\r\n");
    r.w("CLIENT SETNAME sleeper", "+OK\r\n");
    r.w("DEBUG SLEEP 0.2", "+OK\r\n");
    r.w("SLOWLOG LEN", ":1\r\n");
    let e = array(array(r.cmd("SLOWLOG GET 1"))[0].clone());
    // (Timed by the TSC through quanta's calibration: a little under.)
    assert!(int(&e[2]) >= 195_000, "{} µs", int(&e[2]));
    let args: Vec<String> = array(e[3].clone()).iter().map(bulk).collect();
    assert_eq!(args, ["DEBUG", "SLEEP", "0.2"]);
    assert_eq!(bulk(&e[5]), "sleeper");
    // A blocked BLPOP, served 300 ms later: logged then, its wait not
    // counted (it stays under the threshold).
    let mut b = Raw::new(&srv);
    // B blocks on BLPOP; A pushes `value` after `ms`; B is served it.
    let blpop_served = |r: &mut Raw, b: &mut Raw, ms: u64, value: &str| {
        b.send(&[b"BLPOP", b"l", b"0"]);
        std::thread::sleep(std::time::Duration::from_millis(ms));
        r.w(&format!("LPUSH l {value}"), ":1\r\n");
        let served: Vec<String> = array(b.frame()).iter().map(bulk).collect();
        assert_eq!(served, ["l", value]);
    };
    r.w("SLOWLOG RESET", "+OK\r\n");
    blpop_served(&mut r, &mut b, 300, "x");
    r.w("SLOWLOG LEN", ":0\r\n");
    r.w("CONFIG SET slowlog-log-slower-than 0", "+OK\r\n");
    r.w("SLOWLOG RESET", "+OK\r\n");
    blpop_served(&mut r, &mut b, 100, "y");
    let all = array(r.cmd("SLOWLOG GET -1"));
    let logged: Vec<Vec<String>> = all
        .iter()
        .map(|e| {
            array(array(e.clone())[3].clone())
                .iter()
                .map(bulk)
                .collect()
        })
        .collect();
    assert!(
        logged.contains(&vec!["BLPOP".into(), "l".into(), "0".into()]),
        "{logged:?}"
    );
}

#[test]
fn object_memory_debug_introspection() {
    let srv = start();
    let mut r = Raw::new(&srv);
    let long = "x".repeat(45);
    let exact = "y".repeat(44);
    r.w(
        &format!("MSET i 12345 neg -7 s hello long {long} exact {exact} lead 012 big 123456789012345678901"),
        "+OK\r\n",
    );
    // (key, encoding): integers are int, short strings embstr, long raw.
    let cases = [
        ("i", "int"),
        ("neg", "int"),
        ("s", "embstr"),
        ("exact", "embstr"),
        ("long", "raw"),
        // Not a canonical integer, or too big for i64: a string.
        ("lead", "embstr"),
        ("big", "embstr"),
    ];
    for (k, enc) in cases {
        r.w(
            &format!("OBJECT ENCODING {k}"),
            &format!("${}\r\n{enc}\r\n", enc.len()),
        );
    }
    r.w("OBJECT ENCODING missing", "$-1\r\n");
    r.w("OBJECT REFCOUNT s", ":1\r\n");
    r.w("OBJECT IDLETIME s", ":0\r\n");
    assert!(matches!(r.cmd("OBJECT FREQ s"), Frame::Error(_)));
    r.w(
        "OBJECT FOO s",
        "-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n",
    );
    // MEMORY USAGE: an integer covering at least key and value.
    let n = int(&r.cmd("MEMORY USAGE long"));
    assert!(n >= 45 + 4, "{n}");
    let n2 = int(&r.cmd("MEMORY USAGE long SAMPLES 5"));
    assert_eq!(n, n2);
    r.w("MEMORY USAGE missing", "$-1\r\n");
    r.w("MEMORY USAGE long SAMPLES", "-ERR syntax error\r\n");
    // DEBUG TIER: a small fresh key lives in RAM.
    let t = bulk(&r.cmd("DEBUG TIER s"));
    assert!(t.starts_with("tier:ram"), "{t}");
    assert!(t.contains("value_len:5"), "{t}");
    r.w("DEBUG TIER missing", "-ERR no such key\r\n");
}

#[test]
fn time_lastsave_dbsize() {
    let srv = start();
    let mut r = Raw::new(&srv);
    // TIME: [seconds, microseconds] as bulk strings.
    let t = array(r.cmd("TIME"));
    assert_eq!(t.len(), 2);
    let secs: i64 = bulk(&t[0]).parse().unwrap();
    let micros: i64 = bulk(&t[1]).parse().unwrap();
    assert!((secs - now_secs()).abs() < 5, "{secs}");
    assert!((0..1_000_000).contains(&micros));
    // LASTSAVE: a Unix time not in the future.
    let last = int(&r.cmd("LASTSAVE"));
    assert!(last <= now_secs() && last > now_secs() - 3600, "{last}");
    r.w("DBSIZE", ":0\r\n");
    r.w("MSET a 1 b 2", "+OK\r\n");
    r.w("DBSIZE", ":2\r\n");
    r.w(
        "TIME x",
        "-ERR wrong number of arguments for 'time' command\r\n",
    );
}

#[test]
fn quit_closes_after_ok() {
    let srv = start();
    let mut r = Raw::new(&srv);
    // QUIT replies +OK, then the server closes; later pipelined commands
    // are not executed.
    r.s.write_all(b"PING\r\nQUIT\r\nSET after-quit v\r\n")
        .unwrap();
    assert_eq!(read_n(&mut r.s, 12), b"+PONG\r\n+OK\r\n");
    assert!(r.closed());
    let mut con = srv.client();
    let n: i64 = q(&mut con, "EXISTS after-quit");
    assert_eq!(n, 0);
}

#[test]
fn reset_restores_connection_defaults() {
    let srv = start();
    let mut r = Raw::new(&srv);
    r.w("SELECT 2", "+OK\r\n");
    r.w("CLIENT SETNAME named", "+OK\r\n");
    assert!(matches!(r.cmd("HELLO 3"), Frame::Map(_)));
    // RESET: +RESET, db 0, no name, RESP2.
    r.w("RESET", "+RESET\r\n");
    r.w("GET missing", "$-1\r\n");
    r.w("CLIENT GETNAME", "$-1\r\n");
    r.w("SET k v", "+OK\r\n");
    r.w("SELECT 2", "+OK\r\n");
    r.w("EXISTS k", ":0\r\n");
    let info = bulk(&r.cmd("CLIENT INFO"));
    assert!(info.contains(" resp=2"), "{info}");
    r.w(
        "RESET x",
        "-ERR wrong number of arguments for 'reset' command\r\n",
    );
}

/// requirepass: commands are refused with NOAUTH until AUTH succeeds.
#[test]
fn requirepass_is_enforced() {
    let srv = Server::start(&["--requirepass", "s3cret"]);
    let mut s = srv.raw();
    assert_eq!(
        roundtrip(&mut s, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 34),
        b"-NOAUTH Authentication required.\r\n"
    );
    let wrong = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    assert_eq!(roundtrip(&mut s, b"AUTH nope\r\n", wrong.len()), wrong);
    assert_eq!(roundtrip(&mut s, b"AUTH s3cret\r\n", 5), b"+OK\r\n");
    assert_eq!(roundtrip(&mut s, b"GET k\r\n", 5), b"$-1\r\n");
    // HELLO can authenticate in the same call.
    let mut s2 = srv.raw();
    let r = roundtrip(&mut s2, b"HELLO 3 AUTH default s3cret\r\n", 4);
    assert!(r.starts_with(b"%7\r\n"), "{}", String::from_utf8_lossy(&r));
}

/// The latency monitor: off by default (DOCTOR says so); with
/// `latency-monitor-threshold` set, a command at least that long is a
/// `command` event in LATEST, HISTORY and GRAPH; RESET forgets events.
#[test]
fn latency_monitor_samples_slow_commands() {
    let srv = start();
    let mut r = Raw::new(&srv);
    assert!(bulk(&r.cmd("LATENCY DOCTOR")).starts_with("I'm sorry, Dave"));
    r.w("LATENCY LATEST", "*0\r\n");
    r.w("CONFIG SET latency-monitor-threshold 100", "+OK\r\n");
    assert!(bulk(&r.cmd("LATENCY DOCTOR")).starts_with("Dave, no latency spike"));
    r.w("DEBUG SLEEP 0.2", "+OK\r\n");
    r.w("GET fast", "$-1\r\n");
    let latest = array(r.cmd("LATENCY LATEST"));
    assert_eq!(latest.len(), 1, "{latest:?}");
    let ev = array(latest[0].clone());
    assert_eq!(bulk(&ev[0]), "command");
    assert!((now_secs() - int(&ev[1])).abs() <= 2);
    let ms = int(&ev[2]);
    // (Commands are timed by the TSC, scaled by quanta's calibration: a
    // 200 ms sleep was once measured as 199 ms.)
    assert!((195..1000).contains(&ms), "{ms}");
    assert_eq!(int(&ev[3]), ms);
    let history = array(r.cmd("LATENCY HISTORY command"));
    assert_eq!(history.len(), 1);
    let graph = bulk(&r.cmd("LATENCY GRAPH command"));
    assert!(
        graph.starts_with(&format!(
            "command - high {ms} ms, low {ms} ms (all time high {ms} ms)\n"
        )),
        "{graph}"
    );
    assert!(bulk(&r.cmd("LATENCY DOCTOR")).contains("1. command: 1 latency spikes"));
    r.w("LATENCY HISTORY nosuch", "*0\r\n");
    r.w(
        "LATENCY GRAPH nosuch",
        "-ERR No samples available for event 'nosuch'\r\n",
    );
    r.w("LATENCY RESET nosuch", ":0\r\n");
    r.w("LATENCY RESET", ":1\r\n");
    r.w("LATENCY LATEST", "*0\r\n");
}
