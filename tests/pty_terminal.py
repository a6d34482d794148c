"""A real pseudo-terminal for CLI tests: start a command with the pty as its controlling
terminal (stdin, stdout, stderr), read the screen bytes, type Ctrl-C.

Ctrl-C is the byte ``\\x03`` written to the master: the kernel's line discipline turns it
into SIGINT for the terminal's foreground process group, as a real terminal does.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SHOW_CURSOR, HIDE_CURSOR = b"\x1b[?25h", b"\x1b[?25l"
ALT_ON, ALT_OFF = b"\x1b[?1049h", b"\x1b[?1049l"


def plain(b: bytes) -> str:
    return ANSI.sub("", b.decode(errors="replace"))


class Terminal:
    """``cmd`` running on a fresh 140x50 pty."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd=None, rows: int = 50, cols: int = 140):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.attrs_before = termios.tcgetattr(slave)
        env = {**env, "TERM": "xterm-256color", "PYTHONUNBUFFERED": "1", "COLUMNS": str(cols), "LINES": str(rows)}

        def controlling_tty():  # after setsid (start_new_session): the pty becomes the session's terminal
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a foreground job has it

        self.proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                                     start_new_session=True, preexec_fn=controlling_tty)
        os.close(slave)
        self.screen = b""

    def read(self, seconds: float, until=None) -> bytes:
        """Bytes drawn in the next ``seconds`` (or until ``until(all bytes so far)``)."""
        got = b""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([self.master], [], [], 0.2)
            if r:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: the slave side is closed everywhere
                    break
                if not chunk:
                    break
                got += chunk
                self.screen += chunk
                if until is not None and until(self.screen):
                    break
        return got

    def ctrl_c(self) -> None:
        os.write(self.master, b"\x03")

    def usable(self) -> list[str]:
        """What is wrong with the terminal now (empty: usable): cursor hidden, alternate screen
        left on, echo or line editing changed."""
        wrong = []
        if self.screen.rfind(SHOW_CURSOR) < self.screen.rfind(HIDE_CURSOR):
            wrong.append("cursor left hidden")
        if self.screen.count(ALT_ON) != self.screen.count(ALT_OFF):
            wrong.append("alternate screen left on")
        now = termios.tcgetattr(self.master)
        for flag in ("ECHO", "ICANON", "ISIG"):
            bit = getattr(termios, flag)
            if now[3] & bit != self.attrs_before[3] & bit:
                wrong.append(f"{flag} changed")
        return wrong

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)
