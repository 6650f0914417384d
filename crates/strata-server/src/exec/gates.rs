//! The checks of a client's command by its name and arguments, one
//! function each, in Redis's order (`processCommand`): the command known
//! (`known`), its arity and a container's subcommand's (`arity`,
//! `subcommand`), NOAUTH (`authenticated`), a command MULTI refuses
//! (`no_multi`), the ACL user's permissions (`acl`). They are the first
//! of a client's gates; `net::connection::gates` runs them, then the ones
//! that ask the server's state (OOM, NOREPLICAS, RESP2's subscriber
//! context, LOADING, BUSY, CLIENT PAUSE). A new check of this kind is one
//! function here and one entry in `GATES`.
//!
//! A command that passed them is queued (inside MULTI) or run
//! (`dispatch::execute`, which checks nothing). EXEC's commands passed
//! them when queued (EXEC checks the ACL again, as Redis); a script's
//! `redis.call` makes Redis's own checks for scripts (`scripting::run`).

use crate::base::reply;
use crate::command::{ConnState, Shared};
use crate::registry::{CommandSpec, Flags};
use crate::services::acl::LogContext;
use bytes::Bytes;
use std::sync::atomic::Ordering::Relaxed;

/// A check of a known command: its refusal's error text, if it refuses.
pub type Gate = fn(&Shared, &ConnState, &'static CommandSpec, &[Bytes]) -> Result<(), String>;

/// The checks of a known command, in Redis's order.
pub const GATES: &[Gate] = &[arity, subcommand, authenticated, no_multi, acl];

/// Runs `known`, then `GATES` in order: the command, or the first
/// refusal's error text (the caller answers it and counts the refusal).
pub fn check(
    shared: &Shared,
    conn: &ConnState,
    spec: Option<&'static CommandSpec>,
    args: &[Bytes],
) -> Result<&'static CommandSpec, String> {
    let spec = known(shared, spec, args)?;
    for gate in GATES {
        gate(shared, conn, spec, args)?;
    }
    Ok(spec)
}

/// An unknown command.
fn known(
    shared: &Shared,
    spec: Option<&'static CommandSpec>,
    args: &[Bytes],
) -> Result<&'static CommandSpec, String> {
    spec.ok_or_else(|| {
        shared.stats.unknown_commands.fetch_add(1, Relaxed);
        reply::unknown_command_text(args)
    })
}

/// The arity of the registry.
fn arity(
    _: &Shared,
    _: &ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Result<(), String> {
    if spec.arity_ok(args.len()) {
        return Ok(());
    }
    Err(reply::arity_text(spec.name))
}

/// A container's subcommand: known, with its arity.
fn subcommand(
    _: &Shared,
    _: &ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Result<(), String> {
    crate::registry::describe::subcommand_arity(spec.name, args)
}

/// NOAUTH: before AUTH, only `no_auth` commands.
fn authenticated(
    _: &Shared,
    conn: &ConnState,
    spec: &'static CommandSpec,
    _: &[Bytes],
) -> Result<(), String> {
    if conn.authenticated || spec.has(Flags::NO_AUTH) {
        return Ok(());
    }
    Err(reply::NOAUTH.to_string())
}

/// Inside MULTI, a command flagged `no_multi`.
fn no_multi(
    _: &Shared,
    conn: &ConnState,
    spec: &'static CommandSpec,
    _: &[Bytes],
) -> Result<(), String> {
    if conn.multi.is_none() || !spec.has(Flags::NO_MULTI) {
        return Ok(());
    }
    Err("ERR Command not allowed inside a transaction".to_string())
}

/// The ACL user's permissions (a denial logged in the ACL LOG, as made
/// inside MULTI or at the top level).
fn acl(
    shared: &Shared,
    conn: &ConnState,
    spec: &'static CommandSpec,
    args: &[Bytes],
) -> Result<(), String> {
    let context = if conn.multi.is_some() {
        LogContext::Multi
    } else {
        LogContext::Toplevel
    };
    shared
        .acl
        .allows(&conn.user, &conn.handle, spec, args, context)
        .map_err(|denied| denied.error(crate::registry::describe::full_name(spec.name, args)))
}
