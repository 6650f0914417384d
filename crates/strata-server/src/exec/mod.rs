//! What runs commands: the checks of a command by its arguments
//! (`gates`), one command (`dispatch`: its handler, statistics, slow log)
//! or many
//! (`transaction`: MULTI/EXEC's queue in one exclusive section;
//! `scripting`: EVAL and FCALL's `redis.call` on the script thread). The
//! connection (`net::connection`) calls these; command handlers never do
//! (EXEC and EVAL answer `Outcome::Exec` / `Outcome::Eval`, and the
//! connection runs them here).

pub mod dispatch;
pub mod gates;
pub mod scripting;
pub mod transaction;
