//! Lua's own base library where Redis 7.0 patched it: `unpack`.

use mlua::ffi;
use std::os::raw::c_int;

/// `unpack` as Redis 7.0 patched Lua 5.1's (`lbaselib.c`): the count of
/// a range is taken in unsigned arithmetic, so a range past `int`'s
/// (`unpack(t, -2, 2147483647)`) is "too many results to unpack", where
/// the vendored Lua's `e - i + 1` overflows (undefined behaviour: the
/// server crashed). Otherwise the same checks, messages and results.
pub unsafe extern "C-unwind" fn unpack(l: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua's C API over this call's arguments; the `luaL_*` checks
    // and `luaL_error` raise by longjmp, and no Rust value with a
    // destructor lives here.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
        // luaL_optint / luaL_checkint: the integer cast to C's int.
        let i = ffi::luaL_optinteger(l, 2, 1) as c_int;
        let e = if ffi::lua_isnoneornil(l, 3) != 0 {
            ffi::lua_objlen(l, 1) as c_int
        } else {
            ffi::luaL_checkinteger(l, 3) as c_int
        };
        if i > e {
            return 0;
        }
        // The number of elements minus 1.
        let n = (e as u32).wrapping_sub(i as u32);
        if n >= c_int::MAX as u32 || ffi::lua_checkstack(l, n as c_int + 1) == 0 {
            return ffi::luaL_error(l, c"too many results to unpack".as_ptr());
        }
        for k in i..=e {
            ffi::lua_rawgeti(l, 1, k as ffi::lua_Integer);
        }
        n as c_int + 1
    }
}
