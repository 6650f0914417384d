//! The command table: every command Strata serves, one entry each (name,
//! arity, flags, key positions, group, summary, handler), in one place.
//! It is the single source for arity errors, write/denyoom handling and
//! `COMMAND` output; `lookup` finds an entry by name.

use super::server::{client, config};
use super::{
    blocking, geo, hash, keys, list, pubsub, scripting, server, set, sort, stream, strings, zset,
};
use crate::command::{CommandSpec, Flags, Handler};
use std::collections::HashMap;
use std::sync::OnceLock;

pub const W: &[&str] = &["write", "denyoom"];
pub const WF: &[&str] = &["write", "denyoom", "fast"];
pub const WD: &[&str] = &["write", "fast"];
pub const R: &[&str] = &["readonly"];
pub const RF: &[&str] = &["readonly", "fast"];
pub const FAST: &[&str] = &["fast"];
pub const ADMIN: &[&str] = &["admin", "noscript", "loading", "stale"];
pub const CONN: &[&str] = &["noscript", "loading", "stale", "fast"];
/// What a client may send before AUTH, and while a script is busy
/// (Redis 7.0's AUTH, HELLO, QUIT and RESET: `no_auth`, `allow_busy`).
pub const AUTHLESS: &[&str] = &[
    "noscript",
    "loading",
    "stale",
    "fast",
    "no_auth",
    "allow_busy",
];
pub const SCRIPT: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "may_replicate",
    "no_mandatory_keys",
    "movablekeys",
];
pub const SCRIPT_RO: &[&str] = &[
    "noscript",
    "stale",
    "skip_monitor",
    "no_mandatory_keys",
    "readonly",
    "movablekeys",
];
pub const PUBSUB: &[&str] = &["pubsub", "noscript", "loading", "stale"];
pub const TXN: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];

pub const fn cmd(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
    group: &'static str,
    summary: &'static str,
    handler: Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags: Flags::parse(flags),
        keys,
        group,
        summary,
        handler,
    }
}

pub const K1: (i32, i32, i32) = (1, 1, 1);
pub const KALL: (i32, i32, i32) = (1, -1, 1);
pub const K2: (i32, i32, i32) = (1, 2, 1);
pub const K0: (i32, i32, i32) = (0, 0, 0);

/// The command table.
pub static COMMANDS: &[CommandSpec] = &[
    // strings
    cmd("get", 2, RF, K1, "string", "Returns the string value of a key.", strings::get),
    cmd("set", -3, W, K1, "string", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", strings::set),
    cmd("setnx", 3, WF, K1, "string", "Set the string value of a key only when the key doesn't exist.", strings::setnx),
    cmd("setex", 4, W, K1, "string", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", strings::setex),
    cmd("psetex", 4, W, K1, "string", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", strings::psetex),
    cmd("getset", 3, WF, K1, "string", "Returns the previous string value of a key after setting it to a new value.", strings::getset),
    cmd("getdel", 2, WD, K1, "string", "Returns the string value of a key after deleting the key.", strings::getdel),
    cmd("getex", -2, WD, K1, "string", "Returns the string value of a key after setting its expiration time.", strings::getex),
    cmd("mget", -2, RF, KALL, "string", "Atomically returns the string values of one or more keys.", strings::mget),
    cmd("mset", -3, W, (1, -1, 2), "string", "Atomically creates or modifies the string values of one or more keys.", strings::mset),
    cmd("msetnx", -3, W, (1, -1, 2), "string", "Atomically modifies the string values of one or more keys only when all keys don't exist.", strings::msetnx),
    cmd("append", 3, WF, K1, "string", "Appends a string to the value of a key. Creates the key if it doesn't exist.", strings::append),
    cmd("strlen", 2, RF, K1, "string", "Returns the length of a string value.", strings::strlen),
    cmd("getrange", 4, R, K1, "string", "Returns a substring of the string stored at a key.", strings::getrange),
    cmd("substr", 4, R, K1, "string", "Returns a substring from a string value.", strings::getrange),
    cmd("setrange", 4, W, K1, "string", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", strings::setrange),
    cmd("setbit", 4, W, K1, "bitmap", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", strings::bitmap::setbit),
    cmd("getbit", 3, RF, K1, "bitmap", "Returns a bit value by offset.", strings::bitmap::getbit),
    cmd("bitcount", -2, R, K1, "bitmap", "Counts the number of set bits (population counting) in a string.", strings::bitmap::bitcount),
    cmd("bitpos", -3, R, K1, "bitmap", "Finds the first set (1) or clear (0) bit in a string.", strings::bitmap::bitpos),
    cmd("bitop", -4, W, (2, -1, 1), "bitmap", "Performs bitwise operations on multiple strings, and stores the result.", strings::bitmap::bitop),
    cmd("bitfield", -2, W, K1, "bitmap", "Performs arbitrary bitfield integer operations on strings.", strings::bitfield::bitfield),
    cmd("bitfield_ro", -2, RF, K1, "bitmap", "Performs arbitrary read-only bitfield integer operations on strings.", strings::bitfield::bitfield_ro),
    cmd("lcs", -3, R, (1, 2, 1), "string", "Finds the longest common substring.", strings::lcs::lcs),
    cmd("pfadd", -2, WF, K1, "hyperloglog", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", strings::hll::pfadd),
    cmd("pfcount", -2, &["readonly", "may_replicate"], KALL, "hyperloglog", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).", strings::hll::pfcount),
    cmd("pfmerge", -2, W, KALL, "hyperloglog", "Merges one or more HyperLogLog values into a single key.", strings::hll::pfmerge),
    cmd("pfdebug", 3, &["write", "denyoom", "admin"], (2, 2, 1), "hyperloglog", "Internal commands for debugging HyperLogLog values.", strings::hll::pfdebug),
    cmd("pfselftest", 1, &["admin"], K0, "hyperloglog", "An internal command for testing HyperLogLog values.", strings::hll::pfselftest),
    cmd("incr", 2, WF, K1, "string", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", strings::incr),
    cmd("decr", 2, WF, K1, "string", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", strings::decr),
    cmd("incrby", 3, WF, K1, "string", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", strings::incrby),
    cmd("decrby", 3, WF, K1, "string", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", strings::decrby),
    cmd("incrbyfloat", 3, WF, K1, "string", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", strings::incrbyfloat),
    // keyspace
    cmd("del", -2, &["write"], KALL, "generic", "Deletes one or more keys.", keys::del),
    cmd("unlink", -2, WD, KALL, "generic", "Asynchronously deletes one or more keys.", keys::del),
    cmd("exists", -2, RF, KALL, "generic", "Determines whether one or more keys exist.", keys::exists),
    cmd("touch", -2, RF, KALL, "generic", "Returns the number of existing keys out of those specified after updating the time they were last accessed.", keys::touch),
    cmd("type", 2, RF, K1, "generic", "Determines the type of value stored at a key.", keys::type_),
    cmd("keys", 2, &["readonly"], K0, "generic", "Returns all key names that match a pattern.", keys::keys),
    cmd("scan", -2, &["readonly"], K0, "generic", "Iterates over the key names in the database.", keys::scan),
    cmd("randomkey", 1, &["readonly"], K0, "generic", "Returns a random key name from the database.", keys::randomkey),
    cmd("rename", 3, &["write"], K2, "generic", "Renames a key and overwrites the destination.", keys::rename),
    cmd("renamenx", 3, WD, K2, "generic", "Renames a key only when the target key name doesn't exist.", keys::renamenx),
    cmd("sort", -2, &["write", "denyoom", "movablekeys"], K1, "generic", "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", sort::sort),
    cmd("sort_ro", -2, &["readonly", "movablekeys"], K1, "generic", "Returns the sorted elements of a list, a set, or a sorted set.", sort::sort_ro),
    cmd("dump", 2, R, K1, "generic", "Returns a serialized representation of the value stored at a key.", keys::dump),
    cmd("restore", -4, W, K1, "generic", "Creates a key from the serialized representation of a value.", keys::restore),
    cmd("move", 3, WD, K1, "generic", "Moves a key to another database.", keys::move_),
    cmd("copy", -3, W, K2, "generic", "Copies the value of a key to a new key.", keys::copy),
    cmd("expire", -3, WD, K1, "generic", "Sets the expiration time of a key in seconds.", keys::expire),
    cmd("pexpire", -3, WD, K1, "generic", "Sets the expiration time of a key in milliseconds.", keys::pexpire),
    cmd("expireat", -3, WD, K1, "generic", "Sets the expiration time of a key to a Unix timestamp.", keys::expireat),
    cmd("pexpireat", -3, WD, K1, "generic", "Sets the expiration time of a key to a Unix milliseconds timestamp.", keys::pexpireat),
    cmd("ttl", 2, RF, K1, "generic", "Returns the expiration time in seconds of a key.", keys::ttl),
    cmd("pttl", 2, RF, K1, "generic", "Returns the expiration time in milliseconds of a key.", keys::pttl),
    cmd("persist", 2, WD, K1, "generic", "Removes the expiration time of a key.", keys::persist),
    cmd("expiretime", 2, RF, K1, "generic", "Returns the expiration time of a key as a Unix timestamp.", keys::expiretime),
    cmd("pexpiretime", 2, RF, K1, "generic", "Returns the expiration time of a key as a Unix milliseconds timestamp.", keys::pexpiretime),
    // hash
    cmd("hset", -4, WF, K1, "hash", "Creates or modifies the value of a field in a hash.", hash::hset),
    cmd("hsetnx", 4, WF, K1, "hash", "Sets the value of a field in a hash only when the field doesn't exist.", hash::hsetnx),
    cmd("hmset", -4, WF, K1, "hash", "Sets the values of multiple fields.", hash::hmset),
    cmd("hget", 3, RF, K1, "hash", "Returns the value of a field in a hash.", hash::hget),
    cmd("hmget", -3, RF, K1, "hash", "Returns the values of all fields in a hash.", hash::hmget),
    cmd("hdel", -3, WD, K1, "hash", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", hash::hdel),
    cmd("hexists", 3, RF, K1, "hash", "Determines whether a field exists in a hash.", hash::hexists),
    cmd("hlen", 2, RF, K1, "hash", "Returns the number of fields in a hash.", hash::hlen),
    cmd("hstrlen", 3, RF, K1, "hash", "Returns the length of the value of a field.", hash::hstrlen),
    cmd("hkeys", 2, R, K1, "hash", "Returns all fields in a hash.", hash::hkeys),
    cmd("hvals", 2, R, K1, "hash", "Returns all values in a hash.", hash::hvals),
    cmd("hgetall", 2, R, K1, "hash", "Returns all fields and values in a hash.", hash::hgetall),
    cmd("hincrby", 4, WF, K1, "hash", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", hash::hincrby),
    cmd("hincrbyfloat", 4, WF, K1, "hash", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", hash::hincrbyfloat),
    cmd("hrandfield", -2, R, K1, "hash", "Returns one or more random fields from a hash.", hash::hrandfield),
    cmd("hscan", -3, R, K1, "hash", "Iterates over fields and values of a hash.", hash::hscan),
    // set
    cmd("sadd", -3, WF, K1, "set", "Adds one or more members to a set. Creates the key if it doesn't exist.", set::sadd),
    cmd("srem", -3, WD, K1, "set", "Removes one or more members from a set. Deletes the set if the last member was removed.", set::srem),
    cmd("sismember", 3, RF, K1, "set", "Determines whether a member belongs to a set.", set::sismember),
    cmd("smismember", -3, RF, K1, "set", "Determines whether multiple members belong to a set.", set::smismember),
    cmd("scard", 2, RF, K1, "set", "Returns the number of members in a set.", set::scard),
    cmd("smembers", 2, R, K1, "set", "Returns all members of a set.", set::smembers),
    cmd("srandmember", -2, R, K1, "set", "Get one or multiple random members from a set", set::srandmember),
    cmd("spop", -2, WD, K1, "set", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", set::spop),
    cmd("smove", 4, WD, K2, "set", "Moves a member from one set to another.", set::smove),
    cmd("sinter", -2, R, KALL, "set", "Returns the intersect of multiple sets.", set::sinter),
    cmd("sintercard", -3, &["readonly", "movablekeys"], K0, "set", "Returns the number of members of the intersect of multiple sets.", set::sintercard),
    cmd("sinterstore", -3, W, KALL, "set", "Stores the intersect of multiple sets in a key.", set::sinterstore),
    cmd("sunion", -2, R, KALL, "set", "Returns the union of multiple sets.", set::sunion),
    cmd("sunionstore", -3, W, KALL, "set", "Stores the union of multiple sets in a key.", set::sunionstore),
    cmd("sdiff", -2, R, KALL, "set", "Returns the difference of multiple sets.", set::sdiff),
    cmd("sdiffstore", -3, W, KALL, "set", "Stores the difference of multiple sets in a key.", set::sdiffstore),
    cmd("sscan", -3, R, K1, "set", "Iterates over members of a set.", set::sscan),
    // list
    cmd("lpush", -3, WF, K1, "list", "Prepends one or more elements to a list. Creates the key if it doesn't exist.", list::lpush),
    cmd("rpush", -3, WF, K1, "list", "Appends one or more elements to a list. Creates the key if it doesn't exist.", list::rpush),
    cmd("lpushx", -3, WF, K1, "list", "Prepends one or more elements to a list only when the list exists.", list::lpushx),
    cmd("rpushx", -3, WF, K1, "list", "Appends an element to a list only when the list exists.", list::rpushx),
    cmd("lpop", -2, WD, K1, "list", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", list::lpop),
    cmd("rpop", -2, WD, K1, "list", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", list::rpop),
    cmd("llen", 2, RF, K1, "list", "Returns the length of a list.", list::llen),
    cmd("lrange", 4, R, K1, "list", "Returns a range of elements from a list.", list::lrange),
    cmd("lindex", 3, R, K1, "list", "Returns an element from a list by its index.", list::lindex),
    cmd("lset", 4, W, K1, "list", "Sets the value of an element in a list by its index.", list::lset),
    cmd("linsert", 5, W, K1, "list", "Inserts an element before or after another element in a list.", list::linsert),
    cmd("lrem", 4, &["write"], K1, "list", "Removes elements from a list. Deletes the list if the last element was removed.", list::lrem),
    cmd("ltrim", 4, &["write"], K1, "list", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", list::ltrim),
    cmd("lpos", -3, R, K1, "list", "Returns the index of matching elements in a list.", list::lpos),
    cmd("lmove", 5, W, K2, "list", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", list::lmove),
    cmd("rpoplpush", 3, W, K2, "list", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", list::rpoplpush),
    cmd("lmpop", -4, &["write", "movablekeys"], K0, "list", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", list::lmpop),
    cmd("blpop", -3, &["write", "noscript", "blocking"], (1, -2, 1), "list", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blocking::blpop),
    cmd("brpop", -3, &["write", "noscript", "blocking"], (1, -2, 1), "list", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blocking::brpop),
    cmd("brpoplpush", 4, &["write", "denyoom", "noscript", "blocking"], K2, "list", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", blocking::brpoplpush),
    cmd("blmove", 6, &["write", "denyoom", "noscript", "blocking"], K2, "list", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", blocking::blmove),
    cmd("blmpop", -5, &["write", "noscript", "blocking", "movablekeys"], K0, "list", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", blocking::blmpop),
    // sorted_set
    cmd("bzpopmin", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted_set", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", blocking::bzpopmin),
    cmd("bzpopmax", -3, &["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted_set", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.", blocking::bzpopmax),
    cmd("bzmpop", -5, &["write", "noscript", "blocking", "movablekeys"], K0, "sorted_set", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", blocking::bzmpop),
    cmd("zadd", -4, WF, K1, "sorted_set", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", zset::zadd),
    cmd("zincrby", 4, WF, K1, "sorted_set", "Increments the score of a member in a sorted set.", zset::zincrby),
    cmd("zrem", -3, WD, K1, "sorted_set", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", zset::zrem),
    cmd("zcard", 2, RF, K1, "sorted_set", "Returns the number of members in a sorted set.", zset::zcard),
    cmd("zscore", 3, RF, K1, "sorted_set", "Returns the score of a member in a sorted set.", zset::zscore),
    cmd("zmscore", -3, RF, K1, "sorted_set", "Returns the score of one or more members in a sorted set.", zset::zmscore),
    cmd("zrank", 3, RF, K1, "sorted_set", "Returns the index of a member in a sorted set ordered by ascending scores.", zset::zrank),
    cmd("zrevrank", 3, RF, K1, "sorted_set", "Returns the index of a member in a sorted set ordered by descending scores.", zset::zrevrank),
    cmd("zcount", 4, RF, K1, "sorted_set", "Returns the count of members in a sorted set that have scores within a range.", zset::zcount),
    cmd("zlexcount", 4, RF, K1, "sorted_set", "Returns the number of members in a sorted set within a lexicographical range.", zset::zlexcount),
    cmd("zrange", -4, R, K1, "sorted_set", "Returns members in a sorted set within a range of indexes.", zset::zrange),
    cmd("zrangestore", -5, W, K2, "sorted_set", "Stores a range of members from sorted set in a key.", zset::zrangestore),
    cmd("zrevrange", -4, R, K1, "sorted_set", "Returns members in a sorted set within a range of indexes in reverse order.", zset::zrevrange),
    cmd("zrangebyscore", -4, R, K1, "sorted_set", "Returns members in a sorted set within a range of scores.", zset::zrangebyscore),
    cmd("zrevrangebyscore", -4, R, K1, "sorted_set", "Returns members in a sorted set within a range of scores in reverse order.", zset::zrevrangebyscore),
    cmd("zrangebylex", -4, R, K1, "sorted_set", "Returns members in a sorted set within a lexicographical range.", zset::zrangebylex),
    cmd("zrevrangebylex", -4, R, K1, "sorted_set", "Returns members in a sorted set within a lexicographical range in reverse order.", zset::zrevrangebylex),
    cmd("zremrangebyrank", 4, &["write"], K1, "sorted_set", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", zset::zremrangebyrank),
    cmd("zremrangebyscore", 4, &["write"], K1, "sorted_set", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", zset::zremrangebyscore),
    cmd("zremrangebylex", 4, &["write"], K1, "sorted_set", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", zset::zremrangebylex),
    cmd("zpopmin", -2, WD, K1, "sorted_set", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zset::zpopmin),
    cmd("zpopmax", -2, WD, K1, "sorted_set", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", zset::zpopmax),
    cmd("zmpop", -4, &["write", "movablekeys"], K0, "sorted_set", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", zset::zmpop),
    cmd("zrandmember", -2, R, K1, "sorted_set", "Returns one or more random members from a sorted set.", zset::zrandmember),
    cmd("zunion", -3, &["readonly", "movablekeys"], K0, "sorted_set", "Returns the union of multiple sorted sets.", zset::zunion),
    cmd("zinter", -3, &["readonly", "movablekeys"], K0, "sorted_set", "Returns the intersect of multiple sorted sets.", zset::zinter),
    cmd("zdiff", -3, &["readonly", "movablekeys"], K0, "sorted_set", "Returns the difference between multiple sorted sets.", zset::zdiff),
    cmd("zunionstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted_set", "Stores the union of multiple sorted sets in a key.", zset::zunionstore),
    // geo (positions in sorted sets)
    cmd("geoadd", -5, W, K1, "geo", "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", geo::geoadd),
    cmd("geodist", -4, R, K1, "geo", "Returns the distance between two members of a geospatial index.", geo::geodist),
    cmd("geohash", -2, R, K1, "geo", "Returns members from a geospatial index as geohash strings.", geo::geohash),
    cmd("geopos", -2, R, K1, "geo", "Returns the longitude and latitude of members from a geospatial index.", geo::geopos),
    cmd("georadius", -6, &["write", "denyoom", "movablekeys"], K1, "geo", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.", geo::georadius),
    cmd("georadius_ro", -6, R, K1, "geo", "Returns members from a geospatial index that are within a distance from a coordinate.", geo::georadius_ro),
    cmd("georadiusbymember", -5, &["write", "denyoom", "movablekeys"], K1, "geo", "Queries a geospatial index for members within a distance from a member, optionally stores the result.", geo::georadiusbymember),
    cmd("georadiusbymember_ro", -5, R, K1, "geo", "Returns members from a geospatial index that are within a distance from a member.", geo::georadiusbymember_ro),
    cmd("geosearch", -7, R, K1, "geo", "Queries a geospatial index for members inside an area of a box or a circle.", geo::geosearch),
    cmd("geosearchstore", -8, W, K2, "geo", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.", geo::geosearchstore),
    cmd("zinterstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted_set", "Stores the intersect of multiple sorted sets in a key.", zset::zinterstore),
    cmd("zdiffstore", -4, &["write", "denyoom", "movablekeys"], K1, "sorted_set", "Stores the difference of multiple sorted sets in a key.", zset::zdiffstore),
    cmd("zintercard", -3, &["readonly", "movablekeys"], K0, "sorted_set", "Returns the number of members of the intersect of multiple sorted sets.", zset::zintercard),
    cmd("zscan", -3, R, K1, "sorted_set", "Iterates over members and scores of a sorted set.", zset::zscan),
    // streams
    cmd("xadd", -5, WF, K1, "stream", "Appends a new message to a stream. Creates the key if it doesn't exist.", stream::xadd),
    cmd("xrange", -4, R, K1, "stream", "Returns the messages from a stream within a range of IDs.", stream::xrange),
    cmd("xrevrange", -4, R, K1, "stream", "Returns the messages from a stream within a range of IDs in reverse order.", stream::xrevrange),
    cmd("xlen", 2, RF, K1, "stream", "Return the number of messages in a stream.", stream::xlen),
    cmd("xdel", -3, WD, K1, "stream", "Returns the number of messages after removing them from a stream.", stream::xdel),
    cmd("xtrim", -4, &["write"], K1, "stream", "Deletes messages from the beginning of a stream.", stream::xtrim),
    cmd("xsetid", -3, WF, K1, "stream", "An internal command for replicating stream values.", stream::xsetid),
    cmd("xread", -4, &["readonly", "blocking", "movablekeys"], K0, "stream", "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.", stream::xread),
    cmd("xreadgroup", -7, &["write", "blocking", "movablekeys"], K0, "stream", "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.", stream::xreadgroup),
    cmd("xgroup", -2, &[], K0, "stream", "A container for consumer groups commands.", stream::xgroup),
    cmd("xack", -4, WD, K1, "stream", "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", stream::xack),
    cmd("xpending", -3, R, K1, "stream", "Returns the information and entries from a stream consumer group's pending entries list.", stream::xpending),
    cmd("xclaim", -6, WD, K1, "stream", "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.", stream::xclaim),
    cmd("xautoclaim", -6, WD, K1, "stream", "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.", stream::xautoclaim),
    cmd("xinfo", -2, &[], K0, "stream", "A container for stream introspection commands.", stream::xinfo),
    // connection and server
    cmd("ping", -1, FAST, K0, "connection", "Returns the server's liveliness response.", server::ping),
    cmd("echo", 2, &["loading", "stale", "fast"], K0, "connection", "Returns the given string.", server::echo),
    cmd("hello", -1, AUTHLESS, K0, "connection", "Handshakes with the Redis server.", server::hello),
    cmd("auth", -2, AUTHLESS, K0, "connection", "Authenticates the connection.", server::auth),
    cmd("select", 2, &["loading", "stale", "fast"], K0, "connection", "Changes the selected database.", server::select),
    cmd("quit", -1, AUTHLESS, K0, "connection", "Closes the connection.", server::quit),
    cmd("reset", 1, AUTHLESS, K0, "connection", "Resets the connection.", server::reset),
    // pub/sub
    cmd("subscribe", -2, PUBSUB, K0, "pubsub", "Listens for messages published to channels.", pubsub::subscribe),
    cmd("unsubscribe", -1, PUBSUB, K0, "pubsub", "Stops listening to messages posted to channels.", pubsub::unsubscribe),
    cmd("psubscribe", -2, PUBSUB, K0, "pubsub", "Listens for messages published to channels that match one or more patterns.", pubsub::psubscribe),
    cmd("punsubscribe", -1, PUBSUB, K0, "pubsub", "Stops listening to messages published to channels that match one or more patterns.", pubsub::punsubscribe),
    cmd("ssubscribe", -2, PUBSUB, KALL, "pubsub", "Listens for messages published to shard channels.", pubsub::ssubscribe),
    cmd("sunsubscribe", -1, PUBSUB, KALL, "pubsub", "Stops listening to messages posted to shard channels.", pubsub::sunsubscribe),
    cmd("publish", 3, &["pubsub", "loading", "stale", "fast", "may_replicate"], K0, "pubsub", "Posts a message to a channel.", pubsub::publish),
    cmd("spublish", 3, &["pubsub", "loading", "stale", "fast", "may_replicate"], K1, "pubsub", "Post a message to a shard channel", pubsub::spublish),
    cmd("pubsub", -2, &["loading", "stale"], K0, "pubsub", "A container for Pub/Sub commands.", pubsub::pubsub),
    // scripting
    cmd("eval", -3, SCRIPT, K0, "scripting", "Executes a server-side Lua script.", scripting::eval),
    cmd("evalsha", -3, SCRIPT, K0, "scripting", "Executes a server-side Lua script by SHA1 digest.", scripting::eval),
    cmd("eval_ro", -3, SCRIPT_RO, K0, "scripting", "Executes a read-only server-side Lua script.", scripting::eval),
    cmd("evalsha_ro", -3, SCRIPT_RO, K0, "scripting", "Executes a read-only server-side Lua script by SHA1 digest.", scripting::eval),
    cmd("script", -2, &["noscript"], K0, "scripting", "A container for Lua scripts management commands.", scripting::script),
    cmd("fcall", -3, SCRIPT, K0, "scripting", "Invokes a function.", scripting::eval),
    cmd("fcall_ro", -3, SCRIPT_RO, K0, "scripting", "Invokes a read-only function.", scripting::eval),
    cmd("function", -2, &["noscript", "write"], K0, "scripting", "A container for function commands.", scripting::function),
    // transactions
    cmd("multi", 1, TXN, K0, "transactions", "Starts a transaction.", server::multi),
    cmd("exec", 1, &["noscript", "loading", "stale", "skip_slowlog"], K0, "transactions", "Executes all commands in a transaction.", server::exec),
    cmd("discard", 1, TXN, K0, "transactions", "Discards a transaction.", server::discard),
    cmd("watch", -2, TXN, KALL, "transactions", "Monitors changes to keys to determine the execution of a transaction.", server::watch),
    cmd("unwatch", 1, TXN, K0, "transactions", "Forgets about watched keys of a transaction.", server::unwatch),
    cmd("client", -2, CONN, K0, "connection", "A container for client connection commands.", client::client),
    cmd("acl", -2, &["noscript", "loading", "stale"], K0, "server", "A container for Access List Control commands.", server::acl),
    cmd("cluster", -2, &[], K0, "cluster", "A container for Redis Cluster commands (cluster support is disabled here).", server::cluster),
    cmd("command", -1, &["loading", "stale"], K0, "server", "Returns detailed information about all commands.", server::command),
    cmd("config", -2, ADMIN, K0, "server", "A container for server configuration commands.", config::config),
    cmd("info", -1, &["loading", "stale"], K0, "server", "Returns information and statistics about the server.", server::info),
    cmd("dbsize", 1, RF, K0, "server", "Returns the number of keys in the database.", server::dbsize),
    cmd("flushdb", -1, &["write"], K0, "server", "Removes all keys from the current database.", server::flushdb),
    cmd("flushall", -1, &["write"], K0, "server", "Removes all keys from all databases.", server::flushall),
    cmd("swapdb", 3, WD, K0, "server", "Swaps two Redis databases.", server::swapdb),
    cmd("time", 1, &["loading", "stale", "fast"], K0, "server", "Returns the server time.", server::time),
    cmd("memory", -2, R, K0, "server", "A container for memory diagnostics commands.", server::memory),
    cmd("object", -2, R, K0, "generic", "A container for object introspection commands.", server::object),
    cmd("slowlog", -2, ADMIN, K0, "server", "A container for slow log commands.", server::slowlog),
    cmd("latency", -2, ADMIN, K0, "server", "A container for latency diagnostics commands.", server::latency),
    cmd("wait", 3, &["noscript"], K0, "generic", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.", server::wait),
    cmd("debug", -2, ADMIN, K0, "server", "A container for debugging commands (DEBUG TIER key says where a value lives).", server::debug),
    cmd("lastsave", 1, &["loading", "stale", "fast"], K0, "server", "Returns the Unix timestamp of the last successful save to disk.", server::lastsave),
    cmd("monitor", 1, ADMIN, K0, "server", "Listens for all requests received by the server in real-time.", server::monitor),
    cmd("save", 1, &["admin", "noscript", "no_async_loading", "no_multi"], K0, "server", "Synchronously writes an index checkpoint (and, with appendonly no, RAM-only values) to disk.", server::save),
    cmd("bgrewriteaof", 1, &["admin", "noscript", "no_async_loading"], K0, "server", "Asynchronously rewrites the append-only file to disk.", server::bgrewriteaof),
    cmd("bgsave", -1, &["admin", "noscript", "no_async_loading"], K0, "server", "Writes an index checkpoint in the background.", server::bgsave),
    cmd("shutdown", -1, &["admin", "noscript", "loading", "stale", "no_multi"], K0, "server", "Synchronously saves and shuts down the server.", server::shutdown),
];

/// For a container whose subcommands have arities of their own, checks
/// the subcommand's arity as Redis's command table does (XGROUP and XINFO
/// also the subcommand's name), before the command runs or is queued
/// (`server::check_subcommand_arity`): writes the error and returns false
/// if it fails.
pub fn check_subcommand(
    spec: &CommandSpec,
    args: &[bytes::Bytes],
    out: &mut bytes::BytesMut,
) -> bool {
    server::check_subcommand_arity(spec.name, args, out)
}

type Index = HashMap<&'static [u8], &'static CommandSpec, foldhash::fast::FixedState>;

/// The commands by their own names.
fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| COMMANDS.iter().map(|c| (c.name.as_bytes(), c)).collect())
}

/// `rename-command`'s names, when any were given: every name clients
/// may use, each with its command (a removed or renamed command's own
/// name is absent).
static RENAMED: OnceLock<HashMap<Vec<u8>, &'static CommandSpec>> = OnceLock::new();

/// `rename-command` lines, applied in order at start as Redis applies
/// them (an empty new name removes the command); Redis's errors.
pub fn rename(renames: &[(String, String)]) -> Result<(), String> {
    if renames.is_empty() {
        return Ok(());
    }
    let mut names: HashMap<Vec<u8>, &'static CommandSpec> =
        index().iter().map(|(n, c)| (n.to_vec(), *c)).collect();
    for (old, new) in renames {
        let spec = names
            .remove(old.to_ascii_lowercase().as_bytes())
            .ok_or("No such command in rename-command")?;
        if !new.is_empty() {
            if new.len() > 32 {
                return Err("Target command name is too long".into());
            }
            let key = new.to_ascii_lowercase().into_bytes();
            if names.contains_key(&key) {
                return Err("Target command name already exists".into());
            }
            names.insert(key, spec);
        }
    }
    RENAMED
        .set(names)
        .map_err(|_| "commands were renamed already".to_string())
}

/// Finds a command by the name clients use (its own, or the one
/// `rename-command` gave it), case-insensitively, without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    // (foldhash, not SipHash: every request looks its command up; the
    // names are ASCII, so no UTF-8 check is needed.)
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    match RENAMED.get() {
        None => index().get(&lower[..]).copied(),
        Some(renamed) => renamed.get(&lower[..]).copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_unique_lowercase_names_and_lookup_ignores_case() {
        let mut seen = std::collections::HashSet::new();
        for c in COMMANDS {
            assert!(seen.insert(c.name), "duplicate {}", c.name);
            assert_eq!(c.name, c.name.to_ascii_lowercase());
            assert!(c.name.len() <= 32);
        }
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(&[b'x'; 40]).is_none());
    }

    #[test]
    fn arity_rules() {
        let get = lookup(b"get").unwrap();
        assert!(get.arity_ok(2) && !get.arity_ok(1) && !get.arity_ok(3));
        let set = lookup(b"set").unwrap();
        assert!(set.arity_ok(3) && set.arity_ok(9) && !set.arity_ok(2));
    }
}
