"""The run report (report.json): what happened, in words and figures; its shape is a schema."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from policies.secrets import NO_SECRETS, Secrets
from sandbox.testrun.run import TestRun

STATUS_FOR_EXIT = {
    0: "fixed",
    1: "not_fixed",
    2: "usage_error",
    3: "environment_error",
    4: "flaky_only",
    5: "unverified",
    6: "project_environment",
    130: "interrupted",
}


#: tests_after when no patch was applied: the tests were not run again.
NOT_RERUN = "not re-run"


def tests_dict(run: TestRun | None) -> dict[str, Any] | None:
    """A test run as plain data for the report."""
    return None if run is None else run.to_dict()


@dataclass(kw_only=True)
class RunReport:
    """Everything report.json holds; `status` and `reason` say in words how the run ended."""

    status: str = "not_fixed"
    exit_code: int = 1
    reason: str = ""
    repo: str = ""
    goal: str = ""
    model: str | None = None
    endpoint: str | None = None
    tool_mode: str | None = None
    sandbox: str | None = None
    test_cmd: str | None = None
    steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    durations: dict[str, float] = field(default_factory=dict)
    tests_before: dict[str, Any] | None = None
    tests_after: dict[str, Any] | str | None = None
    verification: dict[str, Any] | None = None
    verdict: dict[str, Any] | None = None
    files_changed: list[str] = field(default_factory=list)
    files_left_out: list[str] = field(default_factory=list)
    patch: str | None = None
    delivered: str | None = None
    out_dir: str | None = None
    #: The dependency set-up: which command (given, inferred or none), from where, how it went.
    setup: dict[str, Any] | None = None
    #: `worker ci` only: what CI saw failing, the flaky triage, the commit (docs/ci.md).
    ci: dict[str, Any] | None = None

    def finish(self, exit_code: int, reason: str) -> None:
        self.exit_code = exit_code
        self.status = STATUS_FOR_EXIT.get(exit_code, "not_fixed")
        self.reason = reason

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunReport:
        """A report read back (worker/record/folder.py): its fields as written, keys of no
        field dropped, a field left out at its default. Not checked against the schema: a
        reader says what it found, whoever wrote it."""
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})

    def to_dict(self, *, secrets: Secrets = NO_SECRETS) -> dict[str, Any]:
        """The report as plain data, `secrets` masked in every string."""
        return secrets.mask_data(asdict(self))

    def write(self, path: Path, *, secrets: Secrets = NO_SECRETS) -> None:
        """report.json, `secrets` masked (policies/secrets.py)."""
        data = self.to_dict(secrets=secrets)
        # Our own schema, checked against its meta-schema by the tests: not again on every
        # write (jsonschema.validate does, 35 ms of the run's last moments).
        import jsonschema  # here, not at the top: a run's start imports this module

        schema = report_schema()
        jsonschema.validators.validator_for(schema)(schema).validate(data)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def report_schema() -> dict[str, Any]:
    """The JSON Schema of report.json (worker/schemas/report.schema.json)."""
    text = resources.files("worker").joinpath("schemas/report.schema.json").read_text("utf-8")
    return dict(json.loads(text))
