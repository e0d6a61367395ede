#!/usr/bin/env python3
"""flood.py - what other users can do to a coordinator's sockets, for fake_job.sh flood.

usage: flood.py hold PORT COUNT READY-FILE SOURCE RENEW
           hold COUNT idle TCP connections from address SOURCE to 127.0.0.1:PORT until
           killed, replacing the ones the coordinator closes RENEW seconds later (0: at
           once, a churning flood); touch READY-FILE once COUNT were opened; prints
           "closed N" each time the coordinator closed some
       flood.py hello PORT SECRET-FILE       connect over TCP (not the local socket) and
           authenticate as a control client; exit 0 on WELCOME, 1 otherwise
       flood.py local PORT SECRET-HEX        the same through the coordinator's local
           socket, with the secret itself (run as another user, who cannot read the file:
           exits 1 when refused)
"""
import os
import select
import socket
import sys
import time


def local_name(port, secret):
    """coord_local_name() of coordinator/coord_net.c."""
    h = 0xcbf29ce484222325
    for b in secret.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "\0mana-coordinator-%s-%016x" % (port, h)


def hold(port, count, ready, source, renew):
    socks = []
    opened = closed = 0
    next_renew = 0.0
    while True:
        if time.monotonic() >= next_renew:
            while len(socks) < count:
                s = socket.socket()
                try:
                    s.bind((source, 0))
                    s.connect(("127.0.0.1", port))
                except OSError:
                    s.close()
                    time.sleep(0.01)
                    continue
                socks.append(s)
                opened += 1
                if opened == count:
                    open(ready, "w").close()
            next_renew = time.monotonic() + renew
        readable, _, _ = select.select(socks, [], [], 0.2)
        for s in readable:  # closed by the coordinator (dropped or timed out)
            socks.remove(s)
            s.close()
            closed += 1
        if readable:
            print("closed %d" % closed, flush=True)


def hello(sock, secret):
    sock.settimeout(10)
    sock.sendall(("HELLO v=1 secret=%s role=control\n" % secret).encode())
    reply = b""
    while b"\n" not in reply:
        part = sock.recv(4096)
        if not part:
            break
        reply += part
    line = reply.decode(errors="replace").strip()
    print(line or "(closed without a reply)")
    return 0 if line.startswith("WELCOME") else 1


def main():
    what = sys.argv[1]
    port = int(sys.argv[2])
    if what == "hold":
        hold(port, int(sys.argv[3]), sys.argv[4], sys.argv[5], float(sys.argv[6]))
        return 0
    if what == "hello":
        secret = open(sys.argv[3]).read().strip()
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    else:
        secret = sys.argv[3]
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(local_name(port, secret))
    try:
        return hello(sock, secret)
    except OSError as e:
        print("error: %s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
