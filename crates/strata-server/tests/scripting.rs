//! Lua scripts (issue #11, point 3): EVAL, EVALSHA, EVAL_RO, EVALSHA_RO,
//! SCRIPT LOAD / EXISTS / FLUSH; every reply compared with a real
//! redis-server 7.0 (conversions both ways, `redis.call` / `pcall` errors
//! with Redis's wording and line, the sandbox, the bundled libraries);
//! scripts atomic like MULTI/EXEC over cold keys; the `redis` crate's
//! `Script` (EVALSHA, then EVAL on NOSCRIPT); effects durable.

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use oracle::{Conn, RedisServer};

/// Scripts run with KEYS = {"kk"} and ARGV = {"vv"} on both servers after
/// the same setup; replies compared byte for byte.
const SCRIPTS: &[&str] = &[
    "return 1",
    "return 'a'",
    "return {1,2,{3,'x'},nil,5}",
    "return redis.call('get','s')",
    "return redis.call('incr','s')",
    "return redis.pcall('incr','s')",
    "return redis.call('nosuch')",
    "return redis.call('get')",
    "return redis.call('eval','return 1','0')",
    "x = 1",
    "return y",
    "return redis.error_reply('My Error')",
    "return redis.status_reply('FINE')",
    "return {err='bad'}",
    "return {ok='good'}",
    "return 3.99",
    "return -3.99",
    "return true",
    "return false",
    "return nil",
    "return redis.sha1hex('')",
    "return redis.sha1hex('hello')",
    "return redis.sha1hex(12)",
    "return redis.sha1hex({})",
    "return redis.sha1hex(nil)",
    "return redis.sha1hex()",
    "return redis.sha1hex(1, 2)",
    "error('boom')",
    "error({err='E2 custom'})",
    "return redis.call('set', 'k', 1.5)",
    "return redis.call('set','k',{})",
    "return tostring(os)",
    "return loadfile",
    "return type(print)",
    "return cjson.encode({1,2})",
    "return bit.band(7,3)",
    "syntax error here",
    "return KEYS[1]..ARGV[1]",
    "return redis.call('ping')",
    "return redis.call('hgetall','nohash')",
    "return redis.call('get','nokey')",
    "return type(redis.call('get','nokey'))",
    "return redis.call('subscribe','c')",
    "return string.format('%d', 5)",
    "return #KEYS",
    "local t = redis.call('mget','s','nokey') return t",
    "return redis.call('set','f',10/3)",
    "return redis.call('get','f')",
    "return {1,2,3.7,'x',{ok='s'},{err='e'}}",
    "return redis.call('blpop','nol','0')",
    "return tostring(1.5)..' '..tostring(10/3)..' '..tostring(1e20)",
    "return cjson.encode({a=1})",
    "return cjson.encode({a='x/y', b={1,2}})",
    "return cjson.decode('[1,2,{\"a\":\"b\"}]')[3].a",
    "return cjson.encode(cjson.decode('{\"x\":[1,2,3]}'))",
    "return bit.tohex(255)",
    "return bit.bxor(5, 3)",
    "return bit.lshift(1, 31)",
    "return bit.bnot(0)",
    "return redis.call('hset','h','f','v')",
    "return redis.call('hgetall','h')",
    "return redis.call('zadd','z','1','a','2','b')",
    "return redis.call('zrange','z','0','-1','withscores')",
    "return redis.call()",
    "return redis.call('select','1')",
    "redis.call('select','1') return redis.call('set','in1','x')",
    "return redis.call('get','in1')",
    "return redis.pcall('nosuch')",
    "return pcall(function() error('x') end)",
    "return {pcall(redis.call, 'incr', 's')}",
    "return redis.call('lpush','l','a','b') + 1",
    "return table.concat({'a','b'}, '-')",
    "return string.rep('ab', 3)",
    "return math.floor(3.7)",
    "return unpack({1,2,3})",
    "return select('#', 1, 2)",
    "local a = 1\nlocal b = 2\nreturn redis.call('incr','s')",
    "local t = {}\nfor i = 1, 5 do t[i] = redis.call('incr', 'counter') end\nreturn t",
    "return redis.call('exists', KEYS[1])",
    "return redis.call('multi')",
    "return redis.call('script','load','return 1')",
    "return string.len(string.rep('x', 100000))",
    "return redis.call('del', 's', 'nokey')",
    "#!lua flags=no-writes\nreturn redis.call('set','a','b')",
    "#!lua\nreturn 1",
    "#!lua name=x\nreturn 1",
    "#!lua flags=bad\nreturn 1",
    "#!lua flags=no-writes,allow-oom\nreturn redis.call('get','s')",
    "#!foo\nreturn 1",
    "#!lua",
    "#!lua flags=no-writes\nerror('at line 2')",
    "redis.setresp(3); return redis.call('hgetall','nohash')",
    "redis.setresp(4)",
    "redis.setresp()",
    "redis.setresp(3); local r = redis.call('hgetall','h'); return type(r.map)",
    "redis.setresp(3); return redis.call('hgetall','h')",
    "redis.setresp(3); return redis.call('smembers','st')",
    "redis.setresp(3); return {redis.call('get','nokey') == nil, redis.call('zscore','z','a')}",
    "redis.setresp(3); return {true, false}",
    "return {true, false, nil}",
    "return {double=1.5}",
    "return {map={a=1}}",
    "return {set={a=true}}",
    "return {big_number='123'}",
    "return redis.REDIS_VERSION ~= nil",
    // cmsgpack: the bytes and the round trip.
    "return cmsgpack.pack(1, -1, 127, 128, 255, 256, 65535, 65536, -32, -33, -128, -129, -32768, -32769, 4294967296, -2147483649)",
    "return cmsgpack.pack(1.5, 0.1, -2.25, 1e300, 3.0)",
    "return cmsgpack.pack('', 'abc', string.rep('x', 31), string.rep('y', 32), string.rep('z', 256), string.rep('w', 70000))",
    "return cmsgpack.pack({}, {1,2,3}, {a=1}, {1,2,nil,4}, {[2]=1}, true, false, nil)",
    "return cmsgpack.pack({1,{2,{3,{4,{5,{6,{7,{8,{9,{10,{11,{12,{13,{14,{15,{16,{17,{18}}}}}}}}}}}}}}}}}})",
    "local t = {} for i = 1, 20 do t[i] = i end return cmsgpack.pack(t)",
    "local t = {} for i = 1, 20 do t['k'..i] = i end return #cmsgpack.pack(t)",
    "return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1,2,{3}}, -5, 2.5))}",
    "local t = cmsgpack.unpack(cmsgpack.pack({a='x', b={1,2}})) return {t.a, t.b[2]}",
    "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}",
    "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 5, 1)}",
    "return cmsgpack.unpack('\\205')",
    "return cmsgpack.unpack('\\193')",
    "return {cmsgpack.unpack('\\203\\64\\9\\33\\251\\84\\68\\45\\24')}",
    "return tostring(cmsgpack.unpack(cmsgpack.pack(0.5)))",
    // struct: pack, unpack, size.
    "return struct.pack('>I2', 258)",
    "return struct.pack('<i4 h b B', -2, 3, -1, 255)",
    "return struct.pack('>d f', 1.5, 0.25)",
    "return struct.pack('s c3 c0', 'ab', 'xyzw', 'qq')",
    "return struct.pack('!4 b i', 1, 2)",
    "return struct.pack('x b x', 7)",
    "return struct.pack('>l L T', -1, 2, 3)",
    "return {struct.unpack('>I2', '\\1\\2')}",
    "return {struct.unpack('<i4 h b B', struct.pack('<i4 h b B', -2, 3, -1, 255))}",
    "return {struct.unpack('>d', struct.pack('>d', 1.5))}",
    "return {struct.unpack('s c2', 'ab\\0xyz')}",
    "return {struct.unpack('b c0', '\\3abcd')}",
    "return {struct.unpack('B', 'ab', 2)}",
    "return {struct.size('i h !8 d'), struct.size('>I3 x c5')}",
    "return struct.pack('i40', 1)",
    "return struct.pack('!3 i', 1)",
    "return {struct.unpack('i4', 'ab')}",
    "return {struct.unpack('s', 'abc')}",
    "return cmsgpack.pack()",
    "return bit.band('x')",
    "return cjson.encode(function() end)",
    // Tables past mlua's 8,000 references (a crash of the script thread
    // before), and an unpack of more values than Lua's stack holds.
    "local m = {} for i=1,100000 do m[tostring(i)] = i end local a = {} for i=1,100000 do a[i]=i end local e = cmsgpack.pack({m2=m, a3=a, s='x'}) local d = cmsgpack.unpack(e) local n = 0 for k,v in pairs(d.m2) do n = n + 1 end return {#e, n, #d.a3}",
    "local ok, e = pcall(cmsgpack.unpack, string.rep(string.char(1), 9000)) return {tostring(ok), type(e)}",
    // lua-cjson's settings (kept across scripts, restored by the last
    // ones), sparse arrays, numbers past 14 digits, invalid numbers.
    "return cjson.encode({1,nil,3})",
    "return cjson.encode({[1]=1,[20]=2})",
    "return {pcall(cjson.encode, {[1]=1,[20]=2})}",
    "return cjson.encode({[1]=1,[3]=2})",
    "return cjson.encode(123456789012345)",
    "return cjson.encode(1e15)",
    "return cjson.encode({a={b={c=1}}})",
    "return {cjson.encode_max_depth(2), pcall(cjson.encode, {a={b={c=1}}})}",
    "return cjson.encode_max_depth(1000)",
    "return {cjson.encode_sparse_array(true)}",
    "return cjson.encode({[1]=1,[20]=2})",
    "return {cjson.encode_sparse_array(false, 2, 10)}",
    "return cjson.encode_number_precision(3)",
    "return cjson.encode(3.14159)",
    "return cjson.encode_number_precision(14)",
    "return cjson.encode_invalid_numbers(\"null\")",
    "return cjson.encode({1/0, 0/0})",
    "return cjson.encode_invalid_numbers(true)",
    "return cjson.encode({1/0, -1/0})",
    "return cjson.encode_invalid_numbers(false)",
    "return {pcall(cjson.encode, {1/0})}",
    "return cjson.decode_invalid_numbers(false)",
    "return {pcall(cjson.decode, '[0x10]')}",
    "return cjson.decode_invalid_numbers(true)",
    "return cjson.decode('[0x10]')",
    "return cjson.decode_max_depth(1)",
    "return {pcall(cjson.decode, '[[1]]')}",
    "return cjson.decode_max_depth(1000)",
    "return cjson.encode_keep_buffer(false)",
    "return cjson.encode_keep_buffer(true)",
    "return cjson.encode({[1.5]=1})",
    "return cjson.encode({})",
    "return cjson.encode({[-1]=1})",
    "return cjson.encode_max_depth(0)",
    "return cjson.encode_max_depth('x')",
    "return cjson.encode_keep_buffer('x')",
    "return {cjson.encode_sparse_array('on', 3)}",
    "return {cjson.encode_sparse_array(false, 2, 10)}",
];

#[test]
fn scripts_match_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&["--maxmemory-ram", "16mb"]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    for c in [&mut r, &mut s] {
        c.cmd(&[b"FLUSHALL"]);
        c.cmd(&[b"SET", b"s", b"str"]);
        c.cmd(&[b"SADD", b"st", b"m"]);
    }
    // Each script in RESP2, then from a RESP3 client.
    for resp3 in [false, true] {
        if resp3 {
            r.cmd(&[b"HELLO", b"3"]);
            s.cmd(&[b"HELLO", b"3"]);
        }
        for script in SCRIPTS {
            let args: [&[u8]; 5] = [b"EVAL", script.as_bytes(), b"1", b"kk", b"vv"];
            let (a, b) = (r.cmd(&args), s.cmd(&args));
            assert_eq!(
                String::from_utf8_lossy(&a.bytes),
                String::from_utf8_lossy(&b.bytes),
                "EVAL {script:?} (RESP3: {resp3}): redis vs strata"
            );
        }
    }
    r.cmd(&[b"HELLO", b"2"]);
    s.cmd(&[b"HELLO", b"2"]);
    // The script cache, EVALSHA, the read-only forms, argument errors.
    let steps: &[&[&[u8]]] = &[
        &[b"SCRIPT", b"LOAD", b"return ARGV[1]"],
        &[
            b"EVALSHA",
            b"a6ba8c5b5f1c63a4f0b70bbd5bc5c9b4f6e5b23b",
            b"0",
        ],
        &[
            b"SCRIPT",
            b"EXISTS",
            b"8d09bc9e6c7c1f6b6b1a3e1ec1aeb0ad3a3f4d4f",
            b"ffff",
        ],
        &[
            b"EVALSHA",
            b"ffffffffffffffffffffffffffffffffffffffff",
            b"0",
        ],
        &[b"EVAL_RO", b"return redis.call('get','s')", b"0"],
        &[b"EVAL_RO", b"return redis.call('set','a','1')", b"0"],
        &[b"EVAL", b"return 1", b"-1"],
        &[b"EVAL", b"return 1", b"2", b"a"],
        &[b"EVAL", b"return 1", b"x"],
        &[b"EVAL", b"return 1"],
        &[b"SCRIPT", b"LOAD", b"syntax err"],
        &[b"SCRIPT", b"NOSUCH"],
        &[b"SCRIPT", b"FLUSH"],
        &[b"SCRIPT", b"FLUSH", b"ASYNC"],
        &[b"SCRIPT", b"FLUSH", b"NOW"],
        &[b"SCRIPT", b"EXISTS"],
        &[b"MULTI"],
        &[b"EVAL", b"return redis.call('incr', KEYS[1])", b"1", b"m"],
        &[b"EVAL", b"return redis.call('incr', KEYS[1])", b"1", b"m"],
        &[b"EXEC"],
    ];
    for step in steps {
        let (a, b) = (r.cmd(step), s.cmd(step));
        assert_eq!(
            String::from_utf8_lossy(&a.bytes),
            String::from_utf8_lossy(&b.bytes),
            "{:?}: redis vs strata",
            step.iter()
                .map(|x| String::from_utf8_lossy(x))
                .collect::<Vec<_>>()
        );
    }
    // SCRIPT LOAD then EVALSHA of its digest, by both servers.
    for c in [&mut r, &mut s] {
        let sha = c.cmd(&[b"SCRIPT", b"LOAD", b"return ARGV[1] .. '!'"]);
        let oracle::Reply { frame, .. } = sha;
        let sha = match frame {
            strata_protocol::Frame::Bulk(b) => b,
            other => panic!("{other:?}"),
        };
        let got = c.cmd(&[b"EVALSHA", &sha, b"0", b"hi"]);
        assert_eq!(got.bytes, b"$3\r\nhi!\r\n");
        let upper = sha.to_ascii_uppercase();
        assert_eq!(
            c.cmd(&[b"EVALSHA", &upper, b"0", b"x"]).bytes,
            b"$2\r\nx!\r\n"
        );
    }
}

/// Lua transfers and Lua sums over accounts of every shard on flash
/// (`common::accounts`): no sum ever sees a transfer half done.
#[test]
fn scripts_are_atomic_over_cold_keys() {
    const ACCOUNTS: usize = 400;
    let srv = common::accounts::server();
    common::accounts::open(&mut srv.client(), ACCOUNTS);
    let transfer = redis::Script::new(
        "local n = tonumber(ARGV[1])
         redis.call('hincrby', KEYS[1], 'n', -n)
         redis.call('hincrby', KEYS[2], 'n', n)
         return n",
    );
    let sum = redis::Script::new(&format!(
        "local s = 0
         for i = 0, {} do s = s + tonumber(redis.call('hget', 'acct:' .. i, 'n')) end
         return s",
        ACCOUNTS - 1
    ));
    let mv = move |con: &mut redis::Connection, a: usize, b: usize, amount: i64| {
        let n: i64 = transfer
            .key(format!("acct:{a}"))
            .key(format!("acct:{b}"))
            .arg(amount)
            .invoke(con)
            .unwrap();
        assert_eq!(n, amount);
    };
    let total = move |con: &mut redis::Connection| -> i64 { sum.invoke(con).unwrap() };
    let (reads, fetches) = common::accounts::run(&srv, ACCOUNTS, mv, total);
    eprintln!("scripts: {reads} summing scripts, {fetches} fetches from flash");
}

/// What a script writes is journaled as the commands it ran: under
/// `appendfsync always` an answered EVAL survives kill -9.
#[test]
fn a_scripts_effects_survive_kill_9() {
    let mut srv = common::Server::start(&["--maxmemory-ram", "16mb", "--appendfsync", "always"]);
    let mut con = srv.client();
    let script = redis::Script::new(
        "redis.call('set', KEYS[1], ARGV[1]) redis.call('rpush', KEYS[2], ARGV[1]) return 1",
    );
    for i in 0..100u32 {
        let _: i64 = script
            .key(format!("e:{i}"))
            .key("e:list")
            .arg(i)
            .invoke(&mut con)
            .unwrap();
    }
    drop(con);
    srv.kill9();
    srv.restart();
    let mut con = srv.client();
    for i in 0..100u32 {
        let v: u32 = common::q(&mut con, &format!("GET e:{i}"));
        assert_eq!(v, i);
    }
    let n: u64 = common::q(&mut con, "LLEN e:list");
    assert_eq!(n, 100);
}

/// A script that loops: past `busy-reply-threshold` other clients get
/// BUSY (Redis's words), SCRIPT KILL stops it (its caller gets Redis's
/// error), and the server serves again; one that wrote cannot be killed.
#[test]
fn a_busy_script_answers_busy_and_script_kill_stops_it() {
    let srv = common::start();
    let mut con = srv.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("busy-reply-threshold")
        .arg("200")
        .query(&mut con)
        .unwrap();
    let mut raw = common::raw::Raw::new(&srv);
    raw.w(
        "SCRIPT KILL",
        "-NOTBUSY No scripts in execution right now.\r\n",
    );
    // A transaction opened before the script: a command refused with BUSY
    // fails it, and EXEC refused with BUSY discards it (EXECABORT with the
    // reason, as Redis's rejectCommand), leaving no transaction open.
    let mut tx = common::raw::Raw::new(&srv);
    tx.w("MULTI", "+OK\r\n");
    tx.w("INCR counter", "+QUEUED\r\n");
    let url = srv.url();
    let looping = std::thread::spawn(move || {
        let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
        redis::cmd("EVAL")
            .arg("local i = 0 while true do i = i + 1 end")
            .arg(0)
            .query::<()>(&mut con)
            .unwrap_err()
            .to_string()
    });
    std::thread::sleep(std::time::Duration::from_millis(400));
    raw.w(
        "PING",
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n",
    );
    tx.w(
        "INCR counter",
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n",
    );
    tx.w(
        "EXEC",
        "-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n",
    );
    raw.w("SCRIPT KILL", "+OK\r\n");
    let err = looping.join().unwrap();
    assert!(
        err.contains("Script killed by user with SCRIPT KILL... script: 3fcf51a9b854b8f66cb8685600b0d7df968f4398, on @user_script:1."),
        "{err}"
    );
    raw.w("PING", "+PONG\r\n");
    tx.w("EXEC", "-ERR EXEC without MULTI\r\n");
    raw.w("EXISTS counter", ":0\r\n");
    // A script that wrote cannot be killed; it ends by itself here.
    let url = srv.url();
    let writing = std::thread::spawn(move || {
        let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
        redis::cmd("EVAL")
            .arg("redis.call('set','x','1') local i = 0 while i < 300000000 do i = i + 1 end return i")
            .arg(0)
            .query::<i64>(&mut con)
            .unwrap()
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let reply = raw.cmd("SCRIPT KILL");
    let text = format!("{reply:?}");
    eprintln!("script kill of a writing script: {text}");
    assert!(
        text.contains("UNKILLABLE Sorry the script already executed write commands"),
        "{text}"
    );
    assert_eq!(writing.join().unwrap(), 300_000_000);
    raw.w("GET x", "$1\r\n1\r\n");
}

/// During a script that cannot be killed, SHUTDOWN answers BUSY and
/// SHUTDOWN NOSAVE ends the server at once; what was acknowledged before
/// is there after a restart.
#[test]
fn shutdown_nosave_ends_an_unkillable_script() {
    let mut srv = common::Server::start(&["--maxmemory-ram", "16mb", "--appendfsync", "always"]);
    let mut con = srv.client();
    let _: () = redis::cmd("SET")
        .arg("before")
        .arg("1")
        .query(&mut con)
        .unwrap();
    let url = srv.url();
    let stuck = std::thread::spawn(move || {
        let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
        redis::cmd("EVAL")
            .arg("redis.call('set','x','1') while true do end")
            .arg(0)
            .query::<()>(&mut con)
            .is_err()
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut raw = common::raw::Raw::new(&srv);
    raw.w(
        "SHUTDOWN",
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n",
    );
    raw.send(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(raw.closed(), "SHUTDOWN NOSAVE left the connection open");
    let status = srv.wait_exit(std::time::Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    assert!(stuck.join().unwrap(), "the script's client got a reply");
    srv.restart();
    let mut con = srv.client();
    let v: String = common::q(&mut con, "GET before");
    assert_eq!(v, "1");
}

/// Input a script hands to the libraries cannot crash the server: deeply
/// nested MessagePack is refused, and the server answers afterwards.
#[test]
fn hostile_library_input_gets_an_error_not_a_crash() {
    let srv = common::start();
    let mut raw = common::raw::Raw::new(&srv);
    raw.send(&[
        b"EVAL",
        b"return cmsgpack.unpack(string.rep(string.char(145), 200000) .. string.char(1))",
        b"0",
    ]);
    let text = format!("{:?}", raw.frame());
    assert!(text.contains("Bad data format"), "{text}");
    raw.w("PING", "+PONG\r\n");
}

/// `cjson.decode` against redis-server's lua-cjson: values (re-encoded)
/// and errors, byte for byte, for well-formed, odd and broken texts.
#[test]
fn cjson_decode_matches_redis_7() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let mut r = Conn::connect(redis.port);
    let mut s = Conn::connect(strata.port);
    let deep_ok = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    let deep = format!("{}{}", "[".repeat(1001), "]".repeat(1001));
    let mut texts: Vec<Vec<u8>> = [
        "{",
        "[1,2",
        "{\"a\":}",
        "nul",
        "\"abc",
        "[1,]",
        "{\"a\" 1}",
        "1e999",
        "[1] x",
        "",
        "0x10",
        "+1",
        "-",
        "01",
        "1.",
        "NaN",
        "-Infinity",
        "\"\\u00e9\\ud83d\\ude00\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\x\"",
        "\"\\u12\"",
        "[[[[",
        "tru",
        "fals",
        "{\"a\":1,\"b\":[true,false,null]}",
        "  3  ",
        "\"a\\/b\"",
        "1.5e",
        ".5",
        "1e-400",
        "0x1p3",
        "[1,2,3]",
        "{\"k\":{\"k\":{}}}",
        "[\"\\t\\n\\\\\"]",
        "{1:2}",
        "[1 2]",
        "\"\\u0000x\"",
        "123456789012345678901234567890",
    ]
    .iter()
    .map(|t| t.as_bytes().to_vec())
    .collect();
    texts.push(deep_ok.into_bytes());
    texts.push(deep.into_bytes());
    texts.push(b"[1]\0garbage".to_vec());
    texts.push(b"\0[1]".to_vec());
    texts.push(b"\"a\0b\"".to_vec());
    for t in &texts {
        for script in [
            "return cjson.encode(cjson.decode(ARGV[1]))",
            "return type(cjson.decode(ARGV[1]))",
        ] {
            let args: [&[u8]; 4] = [b"EVAL", script.as_bytes(), b"0", t];
            let (a, b) = (r.cmd(&args), s.cmd(&args));
            assert_eq!(
                String::from_utf8_lossy(&a.bytes),
                String::from_utf8_lossy(&b.bytes),
                "{script} of {:?}",
                String::from_utf8_lossy(t)
            );
        }
    }
}

/// A script returning a table that contains itself: the reply nests
/// arrays of one element until Redis's Lua stack limit, where an error
/// takes the next level (Redis's unit/scripting "Script return recursive
/// object" reads it so); the connection goes on.
#[test]
fn a_recursive_table_ends_in_a_stack_limit_error() {
    use std::io::{Read, Write};
    let srv = common::Server::start(&[]);
    let mut s = std::net::TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    let script = b"local a = {}; local b = {a}; a[1] = b; return a";
    let mut cmd = format!("*3\r\n$4\r\nEVAL\r\n${}\r\n", script.len()).into_bytes();
    cmd.extend_from_slice(script);
    cmd.extend_from_slice(b"\r\n$1\r\n0\r\n*1\r\n$4\r\nPING\r\n");
    s.write_all(&cmd).unwrap();
    let end = b"-ERR reached lua stack limit\r\n+PONG\r\n";
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    while !got.ends_with(end) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
    }
    let levels = &got[..got.len() - end.len()];
    assert!(levels.len() > 400 && levels.len() % 4 == 0);
    assert!(levels.chunks(4).all(|l| l == b"*1\r\n"));
}
