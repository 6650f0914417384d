//! Function libraries (FUNCTION LOAD / DELETE / LIST / FLUSH / DUMP /
//! RESTORE, FCALL), as Redis 7.0 keeps them.
//!
//! A library is code that starts with a shebang line `#!lua name=<lib>`;
//! loading runs it once in the functions VM (`vm::Vm::load_library`),
//! where it registers its functions with `redis.register_function`.
//! Invariants:
//! 1. Function names are unique across libraries; a library has at least
//!    one function. A load that breaks either, or fails, changes nothing
//!    (a REPLACE that fails keeps the old library).
//! 2. The set of libraries is durable: every change hands the engine
//!    the whole set as one blob (Redis's FUNCTION DUMP payload), which it
//!    keeps as a log record and in checkpoints; a restart loads it back
//!    (`Libraries::restore_all`). FLUSHALL does not touch functions.

use super::vm::Vm;
use bytes::Bytes;
use mlua::{Function, MultiValue, Value};
use std::collections::BTreeMap;

/// One `redis.register_function` of the library being loaded.
#[derive(Clone)]
pub struct Registered {
    pub name: String,
    pub callback: Function,
    pub flags: u8,
    pub description: Option<Vec<u8>>,
}

/// Function flags, in the order Redis lists them.
pub const FLAGS: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];
/// The `no-writes` bit of `Registered::flags`.
pub const NO_WRITES: u8 = 1;
/// The `allow-oom` bit of `Registered::flags`.
pub const ALLOW_OOM: u8 = 2;

/// One loaded library.
#[derive(Clone)]
pub struct Library {
    pub code: Bytes,
    /// In registration order.
    pub functions: Vec<Registered>,
}

/// Every library by name, and which library each function is in (a
/// clone shares the functions with the original).
#[derive(Default, Clone)]
pub struct Libraries {
    pub libs: BTreeMap<String, Library>,
    /// Lower-cased function name -> library name.
    by_function: BTreeMap<String, String>,
}

/// How FUNCTION RESTORE treats libraries that exist.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Flush,
    Append,
    Replace,
}

/// The library name of `code` from its shebang line, or Redis's error.
fn metadata(code: &[u8]) -> Result<String, String> {
    if !code.starts_with(b"#!") {
        return Err(crate::base::reply::MISSING_LIBRARY_METADATA.into());
    }
    let Some(end) = code.iter().position(|&c| c == b'\n') else {
        return Err(crate::base::reply::INVALID_LIBRARY_METADATA.into());
    };
    // The line's words as Redis splits them (`sdssplitargs`: quotes).
    let words = strata_protocol::split_args(&code[..end])
        .ok()
        .map(|w| {
            w.iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect::<Vec<_>>()
        })
        .filter(|w| !w.is_empty())
        .ok_or(crate::base::reply::INVALID_LIBRARY_METADATA)?;
    let engine = words[0].as_str();
    let mut name = None;
    for part in words[1..].iter().map(String::as_str) {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case("name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(part[5..].to_string());
            continue;
        }
        return Err(format!("ERR Invalid metadata value given: {part}"));
    }
    let name = name.ok_or(crate::base::reply::NO_LIBRARY_NAME)?;
    let name = verified(name).map_err(|e| format!("ERR {e}"))?;
    if !engine[2..].eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{}' not found", &engine[2..]));
    }
    Ok(name)
}

impl Libraries {
    /// The function `name` (function names are case-insensitive, as in
    /// Redis; library names are not).
    pub fn function(&self, name: &str) -> Option<&Registered> {
        let lib = self.by_function.get(&name.to_ascii_lowercase())?;
        self.libs
            .get(lib)?
            .functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
    }

    pub fn function_count(&self) -> usize {
        self.by_function.len()
    }

    /// `FUNCTION LOAD [REPLACE]`: the library's name, or Redis's error.
    pub fn load(&mut self, vm: &Vm, code: Bytes, replace: bool) -> Result<String, String> {
        let name = metadata(&code)?;
        if self.libs.contains_key(&name) && !replace {
            return Err(format!("ERR Library '{name}' already exists"));
        }
        let functions = vm.load_library(&code)?;
        if functions.is_empty() {
            return Err("ERR No functions registered".into());
        }
        for f in &functions {
            if self
                .by_function
                .get(&f.name.to_ascii_lowercase())
                .is_some_and(|l| *l != name)
            {
                return Err(format!("ERR Function {} already exists", f.name));
            }
        }
        self.remove(&name);
        for f in &functions {
            self.by_function
                .insert(f.name.to_ascii_lowercase(), name.clone());
        }
        self.libs.insert(name.clone(), Library { code, functions });
        Ok(name)
    }

    /// FUNCTION DELETE: whether the library existed.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(lib) = self.libs.remove(name) else {
            return false;
        };
        for f in &lib.functions {
            self.by_function.remove(&f.name.to_ascii_lowercase());
        }
        true
    }

    /// FUNCTION DUMP: Redis's payload (one `FUNCTION2` opcode and the code
    /// per library, the RDB version, a CRC-64).
    pub fn dump(&self) -> Vec<u8> {
        let codes: Vec<&[u8]> = self.libs.values().map(|l| &l.code[..]).collect();
        crate::base::rdb::dump_functions(&codes)
    }

    /// FUNCTION RESTORE: loads every library of `payload` under `policy`,
    /// all or nothing (on an error the libraries are as before).
    pub fn restore(&mut self, vm: &Vm, payload: &[u8], policy: Policy) -> Result<(), String> {
        let codes = crate::base::rdb::restore_functions(payload)?;
        // Load into a fresh set first: the payload alone must be valid.
        let mut incoming = Libraries::default();
        for code in codes {
            incoming.load(vm, Bytes::from(code), false)?;
        }
        let mut next = match policy {
            Policy::Flush => Libraries::default(),
            _ => self.clone(),
        };
        for (name, lib) in incoming.libs {
            if next.libs.contains_key(&name) {
                if policy == Policy::Append {
                    return Err(format!("ERR Library {name} already exists"));
                }
                next.remove(&name);
            }
            for f in &lib.functions {
                if next.by_function.contains_key(&f.name.to_ascii_lowercase()) {
                    return Err(format!("ERR Function {} already exists", f.name));
                }
            }
            for f in &lib.functions {
                next.by_function
                    .insert(f.name.to_ascii_lowercase(), name.clone());
            }
            next.libs.insert(name, lib);
        }
        *self = next;
        Ok(())
    }

    /// Loads the libraries a restart found (`invariant 2`); a library that
    /// no longer loads is logged and left out.
    pub fn restore_all(&mut self, vm: &Vm, blob: &[u8]) {
        match crate::base::rdb::restore_functions(blob) {
            Ok(codes) => {
                for code in codes {
                    if let Err(e) = self.load(vm, Bytes::from(code), true) {
                        tracing::error!("a saved function library does not load: {e}");
                    }
                }
            }
            Err(e) => tracing::error!("the saved function libraries do not decode: {e}"),
        }
    }
}

/// A name as Lua's `lua_isstring` takes it (a string or a number).
fn name_of(v: &Value) -> Option<String> {
    super::convert::lua_string(v).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The arguments of `redis.register_function`, checked with Redis's
/// errors: `(name, callback)` or one table of named arguments.
pub(super) fn register_args(args: &MultiValue) -> Result<Registered, String> {
    let mut name = None;
    let mut callback = None;
    let (mut flags, mut description) = (0u8, None);
    match args.len() {
        1 => {
            let Value::Table(t) = &args[0] else {
                return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).".into());
            };
            for pair in t.clone().pairs::<Value, Value>() {
                let (k, v) = pair.map_err(|e| e.to_string())?;
                let key = match &k {
                    Value::String(s) => s.to_string_lossy().to_string(),
                    _ => String::new(),
                };
                match key.as_str() {
                    "function_name" => {
                        name = Some(name_of(&v).ok_or(
                            "function_name argument given to redis.register_function must be a string",
                        )?)
                    }
                    "callback" => match v {
                        Value::Function(f) => callback = Some(f),
                        _ => {
                            return Err("callback argument given to redis.register_function must be a function".into())
                        }
                    },
                    "description" => {
                        description = Some(
                            name_of(&v)
                                .ok_or("description argument given to redis.register_function must be a string")?
                                .into_bytes(),
                        )
                    }
                    "flags" => {
                        let Value::Table(fl) = v else {
                            return Err("flags argument to redis.register_function must be a table representing function flags".into());
                        };
                        for f in fl.sequence_values::<Value>() {
                            let f = f.map_err(|e| e.to_string())?;
                            let bit = match &f {
                                Value::String(s) => {
                                    FLAGS.iter().position(|x| s.as_bytes()[..] == *x.as_bytes())
                                }
                                _ => None,
                            }
                            .ok_or("unknown flag given")?;
                            flags |= 1 << bit;
                        }
                    }
                    _ => return Err("unknown argument given to redis.register_function".into()),
                }
            }
            let name = name.ok_or("redis.register_function must get a function name argument")?;
            let callback =
                callback.ok_or("redis.register_function must get a callback argument")?;
            Ok(Registered {
                name: verified(name)?,
                callback,
                flags,
                description,
            })
        }
        2 => {
            let name = name_of(&args[0])
                .ok_or("first argument to redis.register_function must be a string")?;
            let Value::Function(f) = &args[1] else {
                return Err("second argument to redis.register_function must be a function".into());
            };
            Ok(Registered {
                name: verified(name)?,
                callback: f.clone(),
                flags: 0,
                description: None,
            })
        }
        _ => Err("wrong number of arguments to redis.register_function".into()),
    }
}

/// A library or function name: letters, digits and `_`, at least one
/// (with the words Redis 7.0 uses for both).
pub fn verified(name: String) -> Result<String, String> {
    if !name.is_empty() && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') {
        Ok(name)
    } else {
        Err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into())
    }
}

#[cfg(test)]
mod tests {
    use super::metadata;

    #[test]
    fn shebang_lines_read_as_redis_reads_them() {
        assert_eq!(metadata(b"#!lua name=a\n").unwrap(), "a");
        assert_eq!(metadata(b"#!LUA  Name=b_1 \nx").unwrap(), "b_1");
        assert_eq!(
            metadata(b"return 1").unwrap_err(),
            crate::base::reply::MISSING_LIBRARY_METADATA
        );
        assert_eq!(
            metadata(b"#!lua name=a").unwrap_err(),
            crate::base::reply::INVALID_LIBRARY_METADATA
        );
        assert_eq!(
            metadata(b"#!lua\n").unwrap_err(),
            crate::base::reply::NO_LIBRARY_NAME
        );
        assert_eq!(
            metadata(b"#!lua name=a foo=1\n").unwrap_err(),
            "ERR Invalid metadata value given: foo=1"
        );
        assert_eq!(
            metadata(b"#!py name=a\n").unwrap_err(),
            "ERR Engine 'py' not found"
        );
    }
}
