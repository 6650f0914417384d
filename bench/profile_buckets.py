#!/usr/bin/env python3
"""Sorts the samples of a folded perf profile (inferno-collapse-perf) into
where the server spent them, and prints a Markdown table: each bucket's
share of the samples and its µs per request (the share of the server's
measured CPU time, divided by the requests).

  profile_buckets.py FOLDED CPU_SECONDS REQUESTS

A stack goes to the first bucket whose test matches any of its frames
(the first frame is the thread's name). The order matters: a syscall made
under the flash read path counts as the syscall.
"""
import re
import sys

# (bucket, pattern over the frames joined by ';'), first match wins.
BUCKETS = [
    ("other threads (tiering, journal, script ...)", None),  # by thread name
    ("io_uring submit (syscall, incl. the device doorbell)", r"io_uring_enter|io_submit_sqes"),
    ("completions: eventfd read, reaping, waking the reader", r"drain_eventfd|uring::Shared>::reap|reap_on_reactor"),
    ("socket send (syscall)", r"__x64_sys_sendto|__x64_sys_sendmsg|__x64_sys_writev|tcp_sendmsg"),
    ("socket receive (syscall)", r"__x64_sys_recvfrom|__x64_sys_read|tcp_recvmsg"),
    ("epoll_wait (idle or polling)", r"__x64_sys_epoll_wait|do_epoll_wait"),
    ("thread park/wake (futex)", r"__x64_sys_futex|futex_wait|futex_wake"),
    ("other syscalls", r"entry_SYSCALL_64"),
    ("interrupts and softirqs", r"asm_common_interrupt|asm_sysvec|irq_exit|handle_softirqs"),
    ("flash read: buffer, record check (CRC), value copy", r"fetch_value|fetch_and_promote|crc32c|decode_record|AlignedBuf"),
    ("allocator (malloc/free)", r"(^|;)(malloc|free|cfree|_int_malloc|_int_free|malloc_consolidate|unlink_chunk|__libc_malloc|__libc_free|realloc)"),
    ("command decode, dispatch, reply", r"decode_request|dispatch::|commands::|strata_protocol|Ctx::reply"),
    ("index lookup", r"get_flat|IndexMap|indexmap|hash_one|ShardLock"),
    ("tokio scheduling and I/O readiness", r"tokio::runtime|tokio::io|mio::"),
    ("connection loop (other)", r"connection::serve"),
    ("other", r""),
]


def main():
    path, cpu, reqs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    counts = {b: 0 for b, _ in BUCKETS}
    total = 0
    pats = [(b, re.compile(p) if p is not None else None) for b, p in BUCKETS]
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            try:
                n = int(n)
            except ValueError:
                continue
            total += n
            thread = stack.split(";", 1)[0]
            if not thread.startswith("strata-worker"):
                counts[BUCKETS[0][0]] += n
                continue
            for b, p in pats[1:]:
                if p.search(stack):
                    counts[b] += n
                    break
    if total == 0:
        print("(no samples)")
        return
    us_total = cpu * 1e6 / reqs
    print("| where | share of samples | µs per request |")
    print("|---|---:|---:|")
    for b, _ in BUCKETS:
        if counts[b]:
            share = counts[b] / total
            print(f"| {b} | {share * 100:.1f}% | {share * us_total:.2f} |")
    print(f"| **all** | 100% ({total} samples) | **{us_total:.2f}** |")


if __name__ == "__main__":
    main()
