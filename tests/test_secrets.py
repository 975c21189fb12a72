"""The mask of a run's secrets (policies/secrets.py), in-process: every form of a value, a value
split between two chunks of a command's output, what is too short to be a secret, the step
summary and the page. tests/test_fix_secrets.py runs `worker fix` with them end to end."""

from __future__ import annotations

import base64
import doctest
import json
from pathlib import Path
from urllib.parse import quote, quote_plus

import policies.secrets
from policies.secrets import MASK, Secrets, run_secrets
from sandbox.container.output import OutputCapture
from worker.ci.summary import write_summary
from worker.record.report import RunReport
from worker.show.write import write_pages

VALUE = "p@ss/w:rd+s3cr3t!"


def test_the_doctests_hold():
    assert doctest.testmod(policies.secrets).failed == 0


def test_every_common_encoding_of_a_value_is_masked():
    secrets = Secrets.of({"TOKEN": VALUE})
    encoded = [
        VALUE,
        quote(VALUE, safe=""),
        quote(VALUE),
        quote_plus(VALUE),
        base64.b64encode(VALUE.encode()).decode(),
        base64.urlsafe_b64encode(VALUE.encode()).decode().rstrip("="),
    ]
    for form in encoded:
        masked = secrets.mask(f"before {form} after")
        assert masked == f"before {MASK} after", form


def test_nested_data_is_masked_and_short_values_are_not_secrets():
    secrets = run_secrets(
        ["A", "B", "UNSET"], {"A": VALUE, "B": "abc", "OPENAI_API_KEY": "sk-1234567"}
    )
    data = {"messages": [{"content": f"{VALUE} and sk-1234567 and abc"}], "n": 3}
    assert secrets.mask_data(data) == {"messages": [{"content": "*** and *** and abc"}], "n": 3}
    assert not run_secrets(["B"], {"B": "abc"}, api_key=False)


def test_a_value_split_between_two_chunks_is_masked_in_the_log_and_the_output(tmp_path: Path):
    secrets = Secrets.of({"TOKEN": VALUE})
    log = tmp_path / "command-001.log"
    capture = OutputCapture(keep_bytes=1000, log_path=log, log_max_bytes=10_000, secrets=secrets)
    data = f"line one\nthe token is {VALUE}, twice: {VALUE}\n".encode()
    for i in range(0, len(data), 5):  # five bytes at a time: every value is split
        capture.feed(data[i : i + 5])
    text = capture.text()
    capture.close()
    assert text == "line one\nthe token is ***, twice: ***\n"
    assert log.read_text() == text


def test_the_step_summary_and_the_page_mask_what_the_run_left_unmasked(tmp_path: Path):
    """fix.patch is the code as it is: the summary and the page mask it when they show it."""
    secrets = Secrets.of({"TOKEN": VALUE})
    patch = tmp_path / "fix.patch"
    patch.write_text(f"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-URL = 1\n+URL = '{VALUE}'\n")
    report = RunReport(status="fixed", exit_code=0, reason="fixed", patch=str(patch)).to_dict()
    (tmp_path / "report.json").write_text(json.dumps(report))
    summary = write_summary(tmp_path, report, {}, secrets=secrets).read_text()
    page = write_pages(tmp_path, secrets=secrets).read_text()
    assert "+URL = '***'" in summary and VALUE not in summary
    assert VALUE not in page and quote(VALUE) not in page and "***" in page
