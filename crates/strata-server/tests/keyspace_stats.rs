//! INFO's `keyspace_hits` and `keyspace_misses`, command by command,
//! compared with redis-server 7.0: what each command adds to them on both
//! servers (a dashboard's hit ratio is hits ÷ (hits + misses)). Redis
//! counts a read command's lookups (`lookupKeyRead`: GET, EXISTS, TYPE,
//! TTL, STRLEN, OBJECT, the set operations' sources, GETSET's and
//! GETDEL's old value ...) and not a write command's (`lookupKeyWrite`:
//! LPUSH, SADD, HSET, ZADD, LPOP, SMOVE ...).

#[path = "common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "redis_diff/oracle.rs"]
mod oracle;

use oracle::{Conn, RedisServer};

/// (hits, misses) from INFO stats.
fn lookups(c: &mut Conn) -> (u64, u64) {
    let info = match c.cmd(&[b"INFO", b"stats"]).frame {
        strata_protocol::Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        f => panic!("INFO stats answered {f:?}"),
    };
    let field = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in INFO stats: {info}"))
    };
    (field("keyspace_hits"), field("keyspace_misses"))
}

#[test]
fn keyspace_hits_and_misses_count_as_redis_7_counts_them() {
    let redis = RedisServer::start();
    let strata = common::Server::start(&[]);
    let (mut r, mut s) = (Conn::connect(redis.port), Conn::connect(strata.port));
    let commands = [
        // Writes: no hit, no miss.
        "RPUSH l a b c",
        "LPUSH l x",
        "RPUSHX nolist a",
        "LPOP l",
        "LPOP nolist",
        "LSET l 0 q",
        "LINSERT l BEFORE q w",
        "LREM l 1 a",
        "LTRIM l 0 5",
        "RPOPLPUSH l l2",
        "LMOVE l2 l LEFT RIGHT",
        "LMPOP 1 l LEFT",
        "SADD s a b c",
        "SADD s a",
        "SADD s3 b c d",
        "SREM s zz",
        "SMOVE s s2 a",
        "SPOP s2",
        "HSET h f v",
        "HSET h f v2",
        "HSETNX h f x",
        "HINCRBY h n 1",
        "HDEL h n",
        "ZADD z 1 a 2 b",
        "ZADD z 3 a",
        "ZINCRBY z 1 a",
        "ZREM z b",
        "XADD x 1-1 f v",
        "GEOADD g 1 1 m",
        "SET k v",
        "SET k2 v NX",
        "INCR c",
        "APPEND k x",
        "SETRANGE k 1 zz",
        "EXPIRE h 100",
        "PERSIST h",
        "DEL c",
        // Reads: a hit or a miss per key.
        "GET k",
        "GET nokey",
        "MGET k nokey",
        "EXISTS h nokey",
        "TYPE h",
        "TYPE nokey",
        "TTL k",
        "PTTL nokey",
        "EXPIRETIME k",
        "STRLEN k",
        "STRLEN nokey",
        "OBJECT ENCODING k",
        "OBJECT FREQ nokey",
        "TOUCH k nokey",
        "LLEN l",
        "LRANGE l 0 -1",
        "LINDEX l 0",
        "HGET h f",
        "HGETALL h",
        "HMGET h f g",
        "HLEN nohash",
        "SISMEMBER s b",
        "SMEMBERS s",
        "SCARD s",
        "SINTER s s3",
        "SUNION s noset",
        "SDIFF s s3",
        "SINTERCARD 2 s s3",
        "ZSCORE z a",
        "ZRANGE z 0 -1",
        "ZRANK z a",
        "GETRANGE k 0 1",
        // Writes that read: their sources count, as reads.
        "SINTERSTORE d s s3",
        "SUNIONSTORE d s noset",
        "SDIFFSTORE d s s3",
        "ZUNIONSTORE dz 2 z nozset",
        "ZRANGESTORE dz z 0 -1",
        "GETSET k n",
        "GETDEL k2",
        "GETEX k",
        "SET k v GET",
        "SORT l ALPHA STORE sl",
        "COPY k k3",
        "COPY nokey k4",
        "PFADD p1 a b",
        "PFCOUNT p1",
        "PFCOUNT nohll",
        "PFCOUNT p1 nohll",
        "PFMERGE p2 p1 nohll",
    ];
    for c in commands {
        let args: Vec<&[u8]> = c.split(' ').map(str::as_bytes).collect();
        let (r0, s0) = (lookups(&mut r), lookups(&mut s));
        let (rr, sr) = (r.cmd(&args), s.cmd(&args));
        // (Sets have no order: elements compared as multisets.)
        match (
            oracle::sorted_elements(&sr.frame),
            oracle::sorted_elements(&rr.frame),
        ) {
            (Some(se), Some(re)) => assert_eq!(se, re, "{c}: the replies differ"),
            _ => assert_eq!(sr.bytes, rr.bytes, "{c}: the replies differ"),
        }
        let (r1, s1) = (lookups(&mut r), lookups(&mut s));
        assert_eq!(
            (s1.0 - s0.0, s1.1 - s0.1),
            (r1.0 - r0.0, r1.1 - r0.1),
            "{c}: (hits, misses) added, strata (left) and redis-server (right)"
        );
    }
}
