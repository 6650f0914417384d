//! The callers of dispatch: what runs commands, one (`dispatch`: the
//! gates that need a command's arguments, then its handler) or many
//! (`transaction`: MULTI/EXEC's queue in one exclusive section;
//! `scripting`: EVAL and FCALL's `redis.call` on the script thread). The
//! connection (`net::connection`) calls these; command handlers never do
//! (EXEC and EVAL answer `Outcome::Exec` / `Outcome::Eval`, and the
//! connection runs them here).

pub mod dispatch;
pub mod scripting;
pub mod transaction;
