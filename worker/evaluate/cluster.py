"""`worker eval --ray ADDRESS`: the same batch as `EvalBatch`, each task a Ray task on a cluster
node that passed its self-check, the driver the only writer (docs/scale.md).

The driver packs every task's tree into Ray's object store before the first task starts (nothing
relies on a filesystem shared with the nodes), pins each attempt to a checked node, sorts
failures (a node's fault is retried elsewhere, up to `retries`; a task that ended on its own
never is), enforces the batch budget over the whole cluster, commits each task once through the
ledger, and ends with a sweep on every node that held a task. What is done, spent and committed
is kept by the books (books.py) the local scheduler keeps too; the nodes answer in wire.py's
types.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from worker.errors import UsageError
from worker.evaluate import on_node
from worker.evaluate.books import Books
from worker.evaluate.cluster_nodes import Node, NodeTable
from worker.evaluate.node_model import NodeModel
from worker.evaluate.outcome import BatchResult, TaskOutcome, outcome_from_report
from worker.evaluate.tasks import EvalTask, materialize
from worker.evaluate.wire import (
    FixAnswer,
    ModelStarted,
    ModelStopped,
    NodeCheck,
    RecheckAnswer,
    SweepAnswer,
    pack_tree,
    unpack_tree,
)

#: Seconds without any node able to run a sandbox before the eval gives up waiting for one.
NO_NODE_WAIT_S = 60.0
NODE_POLL_S = 1.0
CANCEL_GRACE_S = 90.0
MODEL_STOP_S = 30.0


@dataclass(frozen=True, kw_only=True)
class ClusterSettings:
    """Where the cluster is and how carefully to use it."""

    address: str
    retries: int = 2  # further attempts of a task whose node failed it
    max_in_flight: int | None = None  # default: the CPUs of the nodes that passed
    image: str | None = None


#: What a pending reference is the answer of (model: a node's bundled-model server started).
Kind = Literal["check", "fix", "recheck", "model"]


@dataclass(kw_only=True)
class _Pending:
    kind: Kind
    node: Node
    task: EvalTask | None = None
    attempt: str = ""
    outcome: TaskOutcome | None = None
    sent: float = 0.0  # wall clock, to set against the node's own (the phases' breakdown)
    phases: dict[str, dict[str, float]] = field(default_factory=dict)


def import_ray() -> Any:
    """Ray, or a usage error in one line (exit 2) when the optional extra is not installed."""
    try:
        import ray
    except ImportError:
        raise UsageError("--ray needs Ray: pip install 'worker[ray]'") from None
    return ray


class ClusterEval:
    """One eval over a Ray cluster; `run()` returns when every task is committed, the budget
    stopped it, or no node can run a sandbox."""

    def __init__(
        self, *, tasks: Sequence[EvalTask], books: Books, cluster: ClusterSettings
    ) -> None:
        self._tasks = {t.id: t for t in tasks}
        self._books = books
        self._settings = books.settings
        self._cluster = cluster
        self._say = books.say
        self._result = books.result
        self._nodes = NodeTable()
        self._pending: dict[Any, _Pending] = {}
        self._todo: deque[str] = deque()
        self._rechecks: deque[_Pending] = deque()
        self._trees: dict[str, Any] = {}
        self._tries: dict[str, int] = {}  # attempts this driver made, per task
        self._avoid: dict[str, set[str]] = {}
        self._attempts: dict[str, list[dict[str, Any]]] = {}
        # With --model local: one bundled-model server per node that runs tasks, by node id
        # (the actor, and the reference to its start's answer, which each fix there waits on).
        self._models: dict[str, tuple[Any, Any]] = {}

    @property
    def result(self) -> BatchResult:
        return self._result

    def run(self) -> BatchResult:
        ray = import_ray()
        ray.init(address=self._cluster.address, logging_level=logging.WARNING, log_to_driver=False)
        try:
            with self._books:
                self._remote = _remotes(ray)
                self._pack()
                try:
                    self._loop(ray)
                except BaseException:
                    self._cancel(ray)
                    raise
                finally:
                    self._stop_models(ray)
                    self._sweep(ray)
        finally:
            ray.shutdown()
        return self._result

    # -- start and resume -----------------------------------------------------------------

    def _pack(self) -> None:
        """What the books say is not done, each task's tree packed before any task starts."""
        self._todo.extend(task.id for task in self._books.todo())
        self._note_duplicates(self._books.duplicates)
        for task_id in self._todo:  # every tree travels as data, packed before any task starts
            task = self._tasks[task_id]
            repo = materialize(task, into=self._settings.out / "repos" / task.id)
            self._trees[task_id] = self._ray_put(pack_tree(repo))
        packed = f"packed {len(self._trees)} task trees into the object store"
        self._say(f"eval {self._books.eval_id}: {packed}")

    def _ray_put(self, data: bytes) -> Any:
        return import_ray().put(data)

    # -- the loop -----------------------------------------------------------------------------

    def _loop(self, ray: Any) -> None:
        last_poll = 0.0
        no_node_since = time.monotonic()
        while True:
            if time.monotonic() - last_poll >= NODE_POLL_S:
                self._poll_nodes(ray)
                last_poll = time.monotonic()
            if self._nodes.any_usable() or self._nodes.checking():
                no_node_since = time.monotonic()
            elif time.monotonic() - no_node_since > NO_NODE_WAIT_S and self._todo:
                self._stop("no node of the cluster passed the self-check")
            self._submit()
            working = [p for p in self._pending.values() if p.kind in ("fix", "recheck")]
            if not working and not self._rechecks and (not self._todo or self._result.stopped):
                return
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=0.5)
            for ref in ready:
                self._handle(ray, ref, self._pending.pop(ref))

    def _poll_nodes(self, ray: Any) -> None:
        joined, died = self._nodes.update(ray.nodes())
        for node in joined:
            ref = self._on(node, self._remote["check"]).remote(self._cluster.image)
            self._pending[ref] = _Pending(kind="check", node=node)
        for node in died:
            self._say(f"node {node.name} died")
            self._models.pop(node.id, None)  # its server went with it

    def _submit(self) -> None:
        while self._rechecks:
            # The fix's node first: the task's tree is unpacked there already.
            fixed_on = self._rechecks[0].node
            node = fixed_on if fixed_on.free > 0 else self._nodes.pick(avoid=set())
            if node is None:
                break
            pending = self._rechecks.popleft()
            assert pending.task is not None and pending.outcome is not None
            pending.kind, pending.node, pending.sent = "recheck", node, time.time()
            fix_phases = pending.phases.get("fix", {})
            answered = fix_phases.pop("answered", pending.sent)
            fix_phases["recheck_queued"] = round(pending.sent - answered, 3)
            node.running += 1
            ref = self._on(node, self._remote["recheck"]).remote(
                pending.task,
                self._trees[pending.task.id],
                pending.outcome.patch,
                eval_id=self._books.eval_id,
                attempt=pending.attempt,
            )
            self._pending[ref] = pending
        cap = self._cluster.max_in_flight or self._nodes.capacity()
        while self._todo and not self._result.stopped:
            in_flight = sum(1 for p in self._pending.values() if p.kind in ("fix", "recheck"))
            if in_flight + len(self._rechecks) >= cap:
                return
            if self._books.over_budget() is not None:
                return
            task_id = self._todo[0]
            node = self._nodes.pick(avoid=self._avoid.get(task_id, set()))
            if node is None:
                return
            self._todo.popleft()
            self._start_attempt(self._tasks[task_id], node)

    def _start_attempt(self, task: EvalTask, node: Node) -> None:
        attempt, number = self._books.start_attempt(task.id, node=node.name)
        self._tries[task.id] = self._tries.get(task.id, 0) + 1
        self._say(f"{task.id}: attempt {number} on {node.name}")
        node.running += 1
        node.held_tasks = True
        ref = self._on(node, self._remote["fix"]).remote(
            task,
            self._trees[task.id],
            eval_id=self._books.eval_id,
            attempt=attempt,
            fix=self._settings.fix,
            model=self._model_on(node) if self._settings.fix.bundled else None,
        )
        self._pending[ref] = _Pending(
            kind="fix", node=node, task=task, attempt=attempt, sent=time.time()
        )

    def _model_on(self, node: Node) -> Any:
        """The node's bundled-model server, started before its first task: the reference to its
        start's answer, which Ray resolves before the fix task runs (so the task waits on it)."""
        if node.id not in self._models:
            actor = self._on(node, self._remote["model"]).remote()
            started = actor.start.remote()
            self._models[node.id] = (actor, started)
            self._pending[started] = _Pending(kind="model", node=node)
            self._say(f"node {node.name}: starting its bundled model server")
        return self._models[node.id][1]

    # -- answers ------------------------------------------------------------------------------

    def _handle(self, ray: Any, ref: Any, pending: _Pending) -> None:
        node = pending.node
        if pending.kind == "model":
            self._model_started(ray, ref, node)
            return
        if pending.kind in ("fix", "recheck"):
            node.running = max(0, node.running - 1)
        try:
            answer = ray.get(ref)
        except ray.exceptions.RayTaskError as exc:  # our own code failed on the node
            self._answer_failed(pending, _line(exc.cause if exc.cause else exc), node_fault=False)
            return
        except ray.exceptions.RayError as exc:  # the node, its worker or the object is gone
            self._answer_failed(pending, _line(exc), node_fault=True)
            return
        if isinstance(answer, NodeCheck):
            self._checked(node, answer)
        elif isinstance(answer, FixAnswer):
            pending.phases["fix"] = _phases(pending.sent, answer.phases)
            self._fixed(pending, answer)
        elif isinstance(answer, RecheckAnswer):
            pending.phases["recheck"] = _phases(pending.sent, answer.phases)
            self._rechecked(pending, answer)
        else:
            raise TypeError(f"a node answered a {pending.kind} with {type(answer).__name__}")

    def _model_started(self, ray: Any, ref: Any, node: Node) -> None:
        try:
            answer: ModelStarted = ray.get(ref)
        except ray.exceptions.RayError as exc:
            answer = ModelStarted(why=_line(exc))
        if answer.url:
            self._say(
                f"node {node.name}: bundled model server at {answer.url} (pid "
                f"{answer.pid}), shared by its tasks"
            )
        else:
            self._say(
                f"node {node.name}: its bundled model server did not start ({answer.why});"
                " its tasks start their own"
            )

    def _checked(self, node: Node, answer: NodeCheck) -> None:
        if node.state != "checking":
            return
        if answer.ok:
            node.state = "ok"
            self._say(f"node {node.name} passed the self-check ({node.capacity} CPUs)")
        else:
            node.state, node.why = "refused", answer.why
            self._say(f"node {node.name} refused: {node.why}; it gets no task")

    def _answer_failed(self, pending: _Pending, why: str, *, node_fault: bool) -> None:
        node = pending.node
        if pending.kind == "check":
            if node.state == "checking":
                node.state, node.why = "refused", why
                self._say(f"node {node.name} refused: {why}; it gets no task")
            return
        task = pending.task
        assert task is not None
        if node_fault:
            self._lost(pending, why)
            self._recheck_node(node)
            return
        self._record(task.id, pending, f"failed: {why}")
        self._books.failed(task, why, attempts=self._attempts.get(task.id, []))
        self._say(f"{task.id}: eval error: {why}")

    def _recheck_node(self, node: Node) -> None:
        """A node that lost an attempt gets nothing more until it passes its check again (a
        dead one never answers, and Ray may not have said yet that it died)."""
        if node.state == "ok":
            node.state = "checking"
            ref = self._on(node, self._remote["check"]).remote(self._cluster.image)
            self._pending[ref] = _Pending(kind="check", node=node)

    def _lost(self, pending: _Pending, why: str) -> None:
        """A node's fault: the attempt is over; the task runs again elsewhere if it may."""
        task = pending.task
        assert task is not None
        self._books.ended("lost", task.id, pending.attempt, why=why)
        self._record(task.id, pending, f"lost: {why}")
        self._avoid.setdefault(task.id, set()).add(pending.node.id)
        if self._tries.get(task.id, 0) <= self._cluster.retries:
            self._say(f"{task.id}: attempt on {pending.node.name} lost ({why}); retried")
            self._todo.appendleft(task.id)
        else:
            self._say(f"{task.id}: attempt on {pending.node.name} lost ({why}); no retry left")

    def _fixed(self, pending: _Pending, answer: FixAnswer) -> None:
        task = pending.task
        assert task is not None
        where = self._attempt_dir(task.id, pending.attempt)
        began = time.monotonic()
        if answer.fix:
            unpack_tree(answer.fix, where / "fix")
        pending.phases["fix"]["driver_unpack"] = round(time.monotonic() - began, 3)
        pending.phases["fix"]["answered"] = time.time()
        where.mkdir(parents=True, exist_ok=True)
        (where / "fix.log").write_bytes(answer.log)
        outcome = outcome_from_report(task, where / "fix", answer.exit_code, answer.seconds)
        self._books.spend(outcome)  # a lost attempt's spend counts too
        if answer.node_fault:
            self._lost(pending, answer.node_fault)
            return
        pending.outcome = outcome
        self._rechecks.append(pending)

    def _rechecked(self, pending: _Pending, answer: RecheckAnswer) -> None:
        task, outcome = pending.task, pending.outcome
        assert task is not None and outcome is not None
        where = self._attempt_dir(task.id, pending.attempt)
        if answer.logs:
            unpack_tree(answer.logs, where / "recheck")
        outcome.resolved = answer.verdict.resolved
        outcome.recheck = answer.verdict.to_dict()
        outcome.recheck_seconds = answer.seconds
        self._record(task.id, pending, "result")
        outcome.attempts = list(self._attempts[task.id])
        self._commit(task, pending.attempt, outcome)

    def _commit(self, task: EvalTask, attempt: str, outcome: TaskOutcome) -> None:
        """The first complete result of a task is its result; a later one is kept apart."""
        where = self._attempt_dir(task.id, attempt)

        def place() -> None:  # the attempt's files become the task's
            task_dir = self._settings.task_dir(task.id)
            for name in ("fix", "fix.log", "recheck"):
                target = task_dir / name
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink(missing_ok=True)
                if (where / name).exists():
                    (where / name).rename(target)
            shutil.rmtree(where, ignore_errors=True)

        if not self._books.commit(task, attempt, outcome, place=place):
            self._note_duplicates([(task.id, attempt)])

    # -- the end --------------------------------------------------------------------------------

    def _cancel(self, ray: Any) -> None:
        """Ctrl-C: every running attempt is cancelled (its `worker fix` ends its sandbox)."""
        working = [r for r, p in self._pending.items() if p.kind in ("fix", "recheck")]
        if not working:
            return
        self._say(f"cancelling {len(working)} running attempt(s)")
        for ref in working:
            ray.cancel(ref, force=False)
        ray.wait(working, num_returns=len(working), timeout=CANCEL_GRACE_S)
        for ref in working:
            ray.cancel(ref, force=True)
            task = self._pending[ref].task
            assert task is not None
            # On the record: a resumed driver runs the task again (it has no result).
            self._books.ended("cancelled", task.id, self._pending[ref].attempt)

    def _stop_models(self, ray: Any) -> None:
        """Every node's bundled-model server stopped (the actor too: a server it could not stop
        dies with it), on every ending of the eval, Ctrl-C included."""
        if not self._models:
            return
        actors = [actor for actor, _started in self._models.values()]
        names = [self._nodes.nodes[node_id].name for node_id in self._models]
        refs = [actor.stop.remote() for actor in actors]
        ray.wait(refs, num_returns=len(refs), timeout=MODEL_STOP_S)
        stopped: list[str] = []
        for ref, name in zip(refs, names, strict=True):
            try:
                answer: ModelStopped = ray.get(ref, timeout=0)
            except (ray.exceptions.RayError, TimeoutError):
                continue  # its node is gone, or it hangs: ray.kill below ends it either way
            if answer.pid:
                stopped.append(f"pid {answer.pid} on {name}")
        for actor in actors:
            ray.kill(actor)
        self._models.clear()
        self._result.notes.append(f"bundled model servers (one per node) stopped: {_list(stopped)}")
        self._say(f"bundled model servers stopped: {_list(stopped)}")

    def _sweep(self, ray: Any) -> None:
        held = [n for n in self._nodes.nodes.values() if n.held_tasks and n.state == "ok"]
        eval_id = self._books.eval_id
        refs = [self._on(node, self._remote["sweep"]).remote(eval_id) for node in held]
        swept: list[str] = []
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=120) if refs else ([], [])
        for ref in ready:
            try:
                answer: SweepAnswer = ray.get(ref)
            except ray.exceptions.RayError:
                continue
            swept += [f"{name} on {answer.node}" for name in answer.removed]
        used = sorted(n.name for n in self._nodes.nodes.values() if n.held_tasks)
        refused = [f"{n.name} ({n.why})" for n in self._nodes.nodes.values() if n.why]
        self._result.notes.append(f"cluster eval {eval_id}; nodes used: {_list(used)}")
        if refused:
            self._result.notes.append(f"nodes refused by the self-check: {_list(refused)}")
        retried = [t for t, a in self._attempts.items() if len(a) > 1]
        if retried:
            self._result.notes.append(f"tasks run more than once: {_list(retried)}")
        self._result.notes.append(f"the sweep on {len(held)} node(s) removed: {_list(swept)}")
        self._say(f"sweep: removed {_list(swept)}")
        self._books.publish()

    # -- small parts ------------------------------------------------------------------------------

    def _stop(self, why: str) -> None:
        self._books.stop(why)

    def _record(self, task_id: str, pending: _Pending, ended: str) -> None:
        record: dict[str, Any] = {
            "attempt": pending.attempt, "node": pending.node.name, "ended": ended
        }  # fmt: skip
        if pending.phases:
            record["phases"] = pending.phases
        self._attempts.setdefault(task_id, []).append(record)

    def _note_duplicates(self, pairs: list[tuple[str, str]]) -> None:
        for task_id, attempt in pairs:
            kept = self._attempt_dir(task_id, attempt).relative_to(self._settings.out)
            self._result.notes.append(
                f"a later result of {task_id} (attempt {attempt}) kept apart, not counted: {kept}"
            )

    def _attempt_dir(self, task_id: str, attempt: str) -> Path:
        return self._settings.out / "tasks" / task_id / "attempts" / attempt

    @staticmethod
    def _on(node: Node, remote: Any) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return remote.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node.id, soft=False)
        )


def _remotes(ray: Any) -> dict[str, Any]:
    """The node's functions as Ray tasks: never retried by Ray (the driver decides)."""
    return {
        "check": ray.remote(num_cpus=0, max_retries=0)(on_node.self_check),
        "fix": ray.remote(num_cpus=1, max_retries=0)(on_node.run_fix),
        "recheck": ray.remote(num_cpus=1, max_retries=0)(on_node.run_recheck),
        "sweep": ray.remote(num_cpus=0, max_retries=0)(on_node.sweep_eval),
        "model": ray.remote(num_cpus=0, max_restarts=0)(NodeModel),
    }


def _phases(sent: float, node: dict[str, float]) -> dict[str, float]:
    """The node's phases, with the two legs only the driver sees: from its submission to the
    node's function starting (the Ray task's start), and from its end to the answer here."""
    laps = {k: v for k, v in node.items() if k not in ("began", "ended")}
    if "began" in node and "ended" in node:
        laps["ray_start"] = round(node["began"] - sent, 3)
        laps["ray_return"] = round(time.time() - node["ended"], 3)
    return laps


def _list(items: list[str]) -> str:
    return ", ".join(items) if items else "nothing"


def _line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__
