"""The bundled model on a cluster node: one llama-server per node, shared by the node's tasks.

`worker eval --ray ... --model local` starts one `NodeModel` per node that runs its tasks (a Ray
actor pinned to the node, cluster.py), before the node's first task; each `worker fix` there is
told the server's URL in `$WORKER_LOCAL_MODEL_URL` and keeps every other setting of the bundled
model. The server listens on the node's own loopback only (127.0.0.1: the URL means nothing
elsewhere, and a task is pinned to the node that served it). This module imports no Ray.
"""

from __future__ import annotations

from typing import Any

from worker.evaluate.wire import ModelStarted, ModelStopped


class NodeModel:
    """llama-server on the bundled model for this node's tasks, stopped by `stop()` (or with
    the process that holds it: the server dies with its parent, PR_SET_PDEATHSIG)."""

    def __init__(self) -> None:
        self._server: Any = None
        self._answer: ModelStarted | None = None

    def start(self) -> ModelStarted:
        """Pull the weights if needed and start the server, once: its URL and pid, or why not
        when it cannot start (the node's tasks then start their own, and end as a local eval's
        tasks would)."""
        if self._answer is not None:
            return self._answer
        from worker.llm import bundled

        try:
            server = bundled.LocalServer(model_path=bundled.pull(), host="127.0.0.1")
            server.start()
        except Exception as exc:  # noqa: BLE001 - the node's answer, not the driver's crash
            self._answer = ModelStarted(
                why=str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            )
        else:
            self._server = server
            self._answer = ModelStarted(url=server.base_url, pid=server.pid)
        return self._answer

    def stop(self) -> ModelStopped:
        """Stop the server (SIGTERM, then SIGKILL); says which process it was."""
        server, self._server = self._server, None
        if server is None:
            return ModelStopped()
        pid = server.pid
        server.stop()
        return ModelStopped(pid=pid)
