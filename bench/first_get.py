#!/usr/bin/env python3
"""Start a server and time its restart as a client sees it.

usage: first_get.py PORT KEY -- SERVER-COMMAND...

Starts SERVER-COMMAND (stdout/stderr to server.log in the current
directory), then from the moment of exec polls every 5 ms: connect, send
`GET KEY`. Prints three numbers: seconds until the port accepted a
connection, seconds until the first reply that was not -LOADING (the first
GET served), and that reply's length in bytes (-1 for a nil reply). Leaves
the server running and writes its pid to server.pid.
"""
import socket
import subprocess
import sys
import time


def main():
    sep = sys.argv.index("--")
    port, key = int(sys.argv[1]), sys.argv[2].encode()
    cmd = sys.argv[sep + 1:]
    log = open("server.log", "ab")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    open("server.pid", "w").write(str(proc.pid))
    accepted = None
    req = b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key)
    while True:
        if proc.poll() is not None:
            sys.exit("server exited with %s" % proc.returncode)
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            time.sleep(0.005)
            continue
        if accepted is None:
            accepted = time.monotonic() - t0
        try:
            while True:
                s.sendall(req)
                data = b""
                while b"\r\n" not in data:
                    chunk = s.recv(65536)
                    if not chunk:
                        raise OSError("closed")
                    data += chunk
                if data.startswith(b"-LOADING"):
                    time.sleep(0.005)
                    continue
                served = time.monotonic() - t0
                if data.startswith(b"$-1"):
                    n = -1
                elif data.startswith(b"$"):
                    n = int(data[1:data.index(b"\r\n")])
                else:
                    sys.exit("unexpected reply: %r" % data[:100])
                print("%.3f %.3f %d" % (accepted, served, n))
                return
        except OSError:
            time.sleep(0.005)
        finally:
            s.close()


main()
