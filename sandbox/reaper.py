"""PID 1 of a sandbox container: reaps orphans so killed process trees leave no zombies.

As the namespace's init it ignores signals from inside the container (SIGKILL included), so the
runner's kill(-1) after each command never takes the container down. Stdlib only.
"""

import os
import signal
import time


def main():
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            time.sleep(0.5)
        except InterruptedError:
            pass


if __name__ == "__main__":
    main()
