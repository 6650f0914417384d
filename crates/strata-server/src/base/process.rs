//! What the process says of itself: the Redis version it reports, and
//! its CPU times.

/// The Redis version reported to clients (they gate features on it).
pub const REDIS_VERSION: &str = "7.2.0";

/// CPU time used by this process and by its waited-for children (user,
/// system), from getrusage.
pub fn cpu_times() -> [(std::time::Duration, std::time::Duration); 2] {
    [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN].map(|who| {
        // SAFETY: getrusage only writes the struct it is given.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above; `who` is a valid target.
        if unsafe { libc::getrusage(who, &mut ru) } != 0 {
            return Default::default();
        }
        let d = |t: libc::timeval| {
            std::time::Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000)
        };
        (d(ru.ru_utime), d(ru.ru_stime))
    })
}

/// A duration as Redis and memcached print CPU times: seconds.microseconds.
pub fn seconds_micros(d: std::time::Duration) -> String {
    format!("{}.{:06}", d.as_secs(), d.subsec_micros())
}
