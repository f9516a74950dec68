"""A fake aggregator for the relay's tests: speaks the SP REP handshake on a loopback TCP port,
reads each request, and answers it with a reply header announcing SIZE bytes (the request's own
id), followed by 16 bytes and nothing more. Prints its port, then serves until killed."""
import socket
import struct
import sys
import threading


def read_exactly(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def serve(conn, size):
    try:
        conn.sendall(b"\0SP\0\0\x31\0\0")  # REP
        if read_exactly(conn, 8) is None:  # the dialer's REQ header
            return
        while True:
            head = read_exactly(conn, 8)
            if head is None:
                return
            body = read_exactly(conn, struct.unpack(">Q", head)[0])
            if body is None:
                return
            conn.sendall(struct.pack(">Q", size) + body[:4] + b"x" * 16)
    except OSError:
        pass


def main():
    size = int(sys.argv[1])
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(16)
    print(lst.getsockname()[1], flush=True)
    while True:
        conn, _ = lst.accept()
        threading.Thread(target=serve, args=(conn, size), daemon=True).start()


main()
