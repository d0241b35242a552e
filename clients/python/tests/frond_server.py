"""Real frond servers (the binary at FROND_TEST_BIN) for the tests and for
bench.py: started on a free port with flags and environment, killed with
SIGKILL. Standard library only: the benchmark needs no pytest."""

import json
import os
import subprocess
import threading


class ServerError(Exception):
    """A frond server could not be started."""


class Frond:
    def __init__(self, data_dir, env=None, *flags):
        binary = os.environ.get("FROND_TEST_BIN")
        if not binary:
            raise ServerError("FROND_TEST_BIN is not set: build frond (go build ./cmd/frond) and point FROND_TEST_BIN at it")
        os.makedirs(data_dir, exist_ok=True)
        e = dict(os.environ, FROND_CONFIG="")
        e.update(env or {})
        self.p = subprocess.Popen([binary, "serve", "--data-dir", str(data_dir), "--http-addr", "127.0.0.1:0", "--log-format", "json", *flags],
                                  env=e, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log = []
        found = threading.Event()
        self.addr = None

        def read():
            for line in self.p.stderr:
                self.log.append(line)
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("msg") == "frond listening" and not found.is_set():
                    self.addr = rec["addr"]
                    found.set()
            found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60) or self.addr is None:
            self.kill()
            raise ServerError("frond serve did not start:\n" + "".join(self.log))
        self.url = ("https://" if "--tls-cert-file" in flags else "http://") + self.addr

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
