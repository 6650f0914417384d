"""RESP for the bench scripts' fills (their Python heredocs run with
PYTHONPATH=$BENCH_ROOT): encode a command, and send a batch of commands on
one connection, checking that no reply is an error."""
import socket


def connect(port):
    return socket.create_connection(("127.0.0.1", port))


def cmd(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def send(s, batch):
    """Sends the encoded commands and reads their replies (one line each:
    the fills' commands answer integers or OK)."""
    s.sendall(b"".join(batch))
    got = b""
    while got.count(b"\r\n") < len(batch):
        got += s.recv(1 << 20)
    for line in got.split(b"\r\n"):
        assert not line.startswith(b"-"), line


def hset100(n, val, key=b"h"):
    """The big-hash fill: HSETs of 100 new fields `f:%012d` each (n in
    all), yielded 10 commands at a time (a batch in flight)."""
    batch = []
    for lo in range(0, n, 100):
        h = [b"HSET", key]
        for i in range(lo, min(n, lo + 100)):
            h += [b"f:%012d" % i, val]
        batch.append(cmd(h))
        if len(batch) >= 10:
            yield lo, batch
            batch = []
    if batch:
        yield n, batch
