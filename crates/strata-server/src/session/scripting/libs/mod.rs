//! The libraries Redis bundles for scripts, beyond Lua's own: `bit`
//! (LuaBitOp), `cjson` (lua-cjson), `cmsgpack` (lua-cmsgpack) and
//! `struct` (Roberto Ierusalimschy's). Each matches the bundled C
//! library's results, which scripts (and their callers) depend on.

pub mod bit;
pub mod json;
