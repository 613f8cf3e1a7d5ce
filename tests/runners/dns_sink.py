"""DNS sink for the runner harness (Python 3 stdlib only).

    dns_sink.py HOST LOGFILE

Listens on HOST:53 (UDP and TCP) inside the test network namespace, answers every query with
NXDOMAIN at once and logs the name asked for (one JSON line each). The namespace's
/etc/resolv.conf is bind-mounted to point here, so a runner's lookups fail fast (instead of
retrying an unreachable resolver) and the log tells which hosts each runner tried to reach.
"""

import json
import socket
import socketserver
import struct
import sys
import threading
import time

LOCK = threading.Lock()
LOGFILE = None


def qname(data):
    labels, i = [], 12
    while i < len(data) and data[i]:
        n = data[i]
        labels.append(data[i + 1:i + 1 + n].decode(errors="replace"))
        i += 1 + n
    qtype = struct.unpack(">H", data[i + 1:i + 3])[0] if i + 3 <= len(data) else 0
    return ".".join(labels), qtype, i + 5


def answer(data, transport):
    if len(data) < 12:
        return None
    name, qtype, end = qname(data)
    with LOCK, open(LOGFILE, "a") as f:
        f.write(json.dumps({"t": round(time.time(), 3), "name": name, "qtype": qtype,
                            "via": transport}) + "\n")
    tid, flags = struct.unpack(">HH", data[:4])
    rflags = 0x8000 | (flags & 0x0100) | 0x0080 | 3  # response, RD copied, RA, NXDOMAIN
    return struct.pack(">HHHHHH", tid, rflags, 1, 0, 0, 0) + data[12:end]


class Udp(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        r = answer(data, "udp")
        if r:
            sock.sendto(r, self.client_address)


class Tcp(socketserver.BaseRequestHandler):
    def handle(self):
        head = self.request.recv(2)
        if len(head) < 2:
            return
        data = self.request.recv(struct.unpack(">H", head)[0])
        r = answer(data, "tcp")
        if r:
            self.request.sendall(struct.pack(">H", len(r)) + r)


def main(argv):
    global LOGFILE
    if len(argv) != 2:
        sys.exit("usage: dns_sink.py HOST LOGFILE")
    host, LOGFILE = argv
    socketserver.ThreadingUDPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    udp = socketserver.ThreadingUDPServer((host, 53), Udp)
    tcp = socketserver.ThreadingTCPServer((host, 53), Tcp)
    threading.Thread(target=tcp.serve_forever, daemon=True).start()
    udp.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
