//! Running one script or function, its section held: its own client
//! state, `redis.call` through `dispatch::execute`, the reply converted
//! (`convert`), errors worded as Redis words them.

use crate::command::ConnState;
use crate::command::Shared;
use crate::command::{Deferred, Outcome};
use crate::exec::dispatch::execute;
use crate::registry::{CommandSpec, Flags};
use crate::services::scripts::convert::error_parts;
use crate::services::scripts::{compile, convert, functions, vm, Call, Kind};
use bytes::{Bytes, BytesMut};
use mlua::{MultiValue, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use strata_protocol::{parse_frame, Frame, Limits, Parsed, Version};

const WRITE_FLAG_RO: &str = "ERR Can not execute a script with write flag using *_ro command.";

/// Runs one script or function (its section held) and writes its reply
/// in the caller's protocol `version`.
pub(super) fn run(
    shared: &Arc<Shared>,
    db: usize,
    handle: &Arc<crate::services::clients::ClientHandle>,
    version: Version,
    call: &Call,
    deferred: &Deferred,
    out: &mut BytesMut,
) {
    let mut cache = shared.scripts.inner.lock();
    let cache = &mut *cache;
    // The code, its name in errors, whether it may write.
    let (name, f, flags) = match resolve(shared, cache, call) {
        Ok(x) => x,
        Err(e) => return crate::base::reply::error(out, &e),
    };
    let no_writes = flags.is_some_and(|f| f & functions::NO_WRITES != 0);
    if call.read_only && flags.is_some() && !no_writes {
        return crate::base::reply::error(out, WRITE_FLAG_RO);
    }
    let read_only = call.read_only || no_writes;
    // Over `maxmemory` (Redis's pre-command OOM state): a script that may
    // write and is not flagged allow-oom is refused before it runs if it
    // declares flags (a function, a shebang), and its commands that use
    // memory are refused in any case.
    let deny_oom =
        flags.is_none_or(|f| f & functions::ALLOW_OOM == 0) && shared.engine.over_maxmemory();
    if deny_oom && flags.is_some() && !no_writes {
        return crate::base::reply::error(out, crate::base::reply::OOM);
    }
    // A script that declares it may write needs good replicas to start;
    // any script's writes need them to run.
    let no_replicas = shared.no_good_replicas.load(Relaxed);
    if no_replicas && flags.is_some() && !no_writes {
        return crate::base::reply::error(out, crate::base::reply::NOREPLICAS);
    }
    let function = call.kind == Kind::Function;
    let vm = if function { &cache.fvm } else { &cache.vm };
    vm.resp.store(2, Relaxed);
    let mut me = script_client(shared, db, handle, call, deferred);
    let result = (|| -> mlua::Result<(bool, Value)> {
        let lua = &vm.lua;
        let strings = |v: &[Bytes]| -> mlua::Result<mlua::Table> {
            lua.create_sequence_from(
                v.iter()
                    .map(|k| lua.create_string(k))
                    .collect::<mlua::Result<Vec<_>>>()?,
            )
        };
        let (keys, argv) = (strings(&call.keys)?, strings(&call.argv)?);
        if !function {
            let g = lua.globals();
            g.raw_set("KEYS", keys.clone())?;
            g.raw_set("ARGV", argv.clone())?;
        }
        let user = call.user.clone();
        let acl_check = lua.create_function(move |_, args: MultiValue| {
            let mut argv = Vec::with_capacity(args.len());
            for a in &args {
                match convert::arg_bytes(a) {
                    Some(b) => argv.push(Bytes::from(b)),
                    None => {
                        return Err(mlua::Error::runtime(
                            "Lua redis lib command arguments must be strings or integers",
                        ))
                    }
                }
            }
            match argv.first().and_then(|n| crate::registry::lookup(n)) {
                Some(spec) => Ok(user.check(spec, &argv).is_ok()),
                None => Err(mlua::Error::runtime(
                    "Invalid command passed to redis.acl_check_cmd()",
                )),
            }
        })?;
        lua.set_named_registry_value(vm::ACL_CHECK, acl_check)?;
        lua.scope(|scope| {
            let raw = scope.create_function_mut(|lua, args: MultiValue| {
                me.version = if vm.resp.load(Relaxed) == 3 {
                    Version::Resp3
                } else {
                    Version::Resp2
                };
                command(lua, shared, &mut me, &args, read_only, deny_oom)
            })?;
            lua.set_named_registry_value(vm::RAW_CALL, raw)?;
            let r: mlua::Result<MultiValue> = if function {
                vm.run.call((f.clone(), keys, argv))
            } else {
                vm.run.call(f.clone())
            };
            lua.unset_named_registry_value(vm::RAW_CALL)?;
            lua.unset_named_registry_value(vm::ACL_CHECK)?;
            let mut r = r?.into_iter();
            let ok = matches!(r.next(), Some(Value::Boolean(true)));
            Ok((ok, r.next().unwrap_or(Value::Nil)))
        })
    })();
    reply(out, result, version, vm, &name, function);
}

/// The script or function `call` names: its name in errors, its code and
/// its flags (None: an EVAL script without a shebang); else the error.
fn resolve(
    shared: &Shared,
    cache: &mut crate::services::scripts::Cache,
    call: &Call,
) -> Result<(String, mlua::Function, Option<u8>), String> {
    match call.kind {
        Kind::Eval { by_sha: true } => {
            let sha = String::from_utf8_lossy(&call.script).to_ascii_lowercase();
            match cache.by_sha.get(&sha) {
                Some((f, flags)) => Ok((sha, f.clone(), *flags)),
                None => Err("NOSCRIPT No matching script. Please use EVAL.".into()),
            }
        }
        Kind::Eval { by_sha: false } => compile(cache, &call.script),
        Kind::Function => {
            let name = String::from_utf8_lossy(&call.script).to_string();
            match cache.libraries(&shared.engine).function(&name) {
                Some(r) => Ok((name, r.callback.clone(), Some(r.flags))),
                None => Err("ERR Function not found".into()),
            }
        }
    }
}

/// The script's own client: the caller's database and user, RESP2, the
/// keys it declared (client tracking), blocked clients served after it.
fn script_client(
    shared: &Shared,
    db: usize,
    handle: &Arc<crate::services::clients::ClientHandle>,
    call: &Call,
    deferred: &Deferred,
) -> ConnState {
    ConnState {
        db,
        version: Version::Resp2,
        handle: handle.clone(),
        authenticated: true,
        user: call.user.clone(),
        multi: None,
        pubsub: None,
        watched: strata_engine::Watched::new(&shared.engine),
        exec_ready: Some(deferred.clone()),
        caching: None,
        no_touch: false,
        script: true,
        script_keys: call.keys.clone(),
        monitor: false,
    }
}

/// The script's result as its caller's reply: its value, or its error as
/// Redis words it (`<message> script: <name>, on @user_script:<line>.`).
fn reply(
    out: &mut BytesMut,
    result: mlua::Result<(bool, Value)>,
    version: Version,
    vm: &vm::Vm,
    name: &str,
    function: bool,
) {
    let chunk = if function {
        "user_function"
    } else {
        "user_script"
    };
    match result {
        Ok((true, v)) => {
            let script = if vm.resp.load(Relaxed) == 3 {
                Version::Resp3
            } else {
                Version::Resp2
            };
            let p = convert::Protocols {
                caller: version,
                script,
            };
            convert::lua_to_reply(&v, out, 0, p)
        }
        Ok((false, v)) => {
            let (msg, line) = error_parts(&v);
            convert::error_line(
                out,
                format!("{msg} script: {name}, on @{chunk}:{line}.").as_bytes(),
            );
        }
        Err(e) => convert::error_line(out, format!("ERR {e}").as_bytes()),
    }
}

/// `redis.call` / `redis.pcall`: runs one command for the script; its
/// reply as a Lua value, an error as `{err=...}` (which `redis.call`
/// raises).
fn command(
    lua: &mlua::Lua,
    shared: &Arc<Shared>,
    me: &mut ConnState,
    args: &MultiValue,
    read_only: bool,
    deny_oom: bool,
) -> mlua::Result<(Value, bool)> {
    let err = |msg: &[u8]| -> mlua::Result<(Value, bool)> {
        let t = lua.create_table()?;
        t.raw_set("err", lua.create_string(msg)?)?;
        Ok((Value::Table(t), true))
    };
    if args.is_empty() {
        return err(b"ERR Please specify at least one argument for this redis lib call");
    }
    let mut argv = Vec::with_capacity(args.len());
    for a in args {
        match convert::arg_bytes(a) {
            Some(b) => argv.push(Bytes::from(b)),
            None => return err(b"ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    let Some(spec) = crate::registry::lookup(&argv[0]) else {
        return err(b"ERR Unknown Redis command called from script");
    };
    if !spec.arity_ok(argv.len()) {
        return err(b"ERR Wrong number of args calling Redis command from script");
    }
    if (spec.has(Flags::NOSCRIPT) || crate::registry::describe::sub_is_noscript(spec.name, &argv))
        && !shared.scripts.allow_noscript.load(Relaxed)
    {
        return err(b"ERR This Redis command is not allowed from script");
    }
    if let Err(denied) = shared.acl.allows(
        &me.user,
        &me.handle,
        spec,
        &argv,
        crate::services::acl::LogContext::Lua,
    ) {
        return err(denied.script_error().as_bytes());
    }
    // As Redis 7.0: what may propagate (PUBLISH, PFCOUNT) counts as a
    // write here too.
    if read_only && (spec.has(Flags::WRITE) || spec.has(Flags::MAY_REPLICATE)) {
        return err(b"ERR Write commands are not allowed from read-only scripts.");
    }
    if spec.has(Flags::WRITE) && shared.no_good_replicas.load(Relaxed) {
        return err(crate::base::reply::NOREPLICAS.as_bytes());
    }
    if deny_oom && spec.has(Flags::DENYOOM) {
        return err(crate::base::reply::OOM.as_bytes());
    }
    // (A container's subcommand's arity, as Redis's table checks it.)
    if let Err(e) = crate::registry::describe::subcommand_arity(spec.name, &argv) {
        return err(e.as_bytes());
    }
    if spec.has(Flags::WRITE) {
        shared.scripts.busy.wrote.store(true, Relaxed);
    }
    let reply = run_command(shared, me, spec, &argv);
    match parse_frame(&reply, &Limits::default()) {
        Ok(Parsed::Complete {
            value: Frame::Error(e),
            ..
        }) => err(&e),
        Ok(Parsed::Complete { value, .. }) => {
            Ok((convert::frame_to_lua(lua, &value, me.version)?, false))
        }
        _ => err(b"ERR the command's reply could not be read"),
    }
}

fn run_command(
    shared: &Arc<Shared>,
    me: &mut ConnState,
    spec: &'static CommandSpec,
    argv: &[Bytes],
) -> BytesMut {
    let mut out = BytesMut::new();
    match execute(shared, me, spec, argv, &mut out) {
        Outcome::Pending { reply, .. } => futures::executor::block_on(reply),
        Outcome::Done | Outcome::Close | Outcome::Exec | Outcome::Eval => out,
    }
}
