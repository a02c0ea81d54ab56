"""Test-only rank launcher, as torchrun starts ranks: one process per rank of this node with its rank in the
environment; it waits for them and ends the others once one fails.
    fake_launcher.py LOCAL_RANKS SCRIPT FIRST_RANK"""
import os
import subprocess
import sys
import time

local, script, first = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
if os.environ.get("FAKE_LAUNCHES"):  # a test counts the launchers: one line each
    with open(os.environ["FAKE_LAUNCHES"], "a") as fh:
        print(f"ranks {first} to {first + local - 1}", file=fh)
strangers = []
if os.environ.get("FAKE_STRANGERS"):  # before the ranks: one idle connection on the coordinator's port, one of junk
    import socket
    host, port = os.environ["CONFORMANCE_RANKS_ADDRESS"].rsplit(":", 1)
    strangers = [socket.create_connection((host, int(port))) for _ in range(2)]
    strangers[1].sendall(b"GET / HTTP/1.0\r\n\r\n" * 4)
    strangers[1].close()
ranks = [subprocess.Popen([sys.executable, script], env={**os.environ, "FAKE_RANK": str(first + r)})
         for r in range(local)]
while all(p.poll() is None for p in ranks):
    time.sleep(0.05)
print(f"launcher: a rank exited with status {[p.poll() for p in ranks if p.poll() is not None][0]}", flush=True)
for p in ranks:
    p.kill()
sys.exit(1)
