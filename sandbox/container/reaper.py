"""PID 1 of a sandbox container: reaps orphans so killed process trees leave no zombies.

As the namespace's init it ignores signals from inside the container (SIGKILL included), so the
runner's kill(-1) after each command never takes the container down. Stdlib only.
"""

import os
import signal


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGTERM})
    while True:
        sig = signal.sigtimedwait({signal.SIGCHLD, signal.SIGTERM}, 1.0)
        if sig is not None and sig.si_signo == signal.SIGTERM:
            os._exit(0)
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break


if __name__ == "__main__":
    main()
