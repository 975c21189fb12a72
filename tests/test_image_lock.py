"""Workers on one host build an image one at a time (in-process: no Docker)."""

from __future__ import annotations

import threading

from sandbox.container.image import one_builder


def test_a_second_builder_waits_for_the_first_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKER_HOME", str(tmp_path))
    said: list[str] = []
    order: list[str] = []
    with one_builder("worker-sandbox:py3.13", said.append):
        second = threading.Thread(
            target=lambda: _one_builder_run("worker-sandbox:py3.13", said, order)
        )
        second.start()
        second.join(timeout=1.0)
        assert second.is_alive()  # blocked behind the first
        order.append("first done")
    second.join(timeout=10)
    assert order == ["first done", "second ran"]
    assert said == ["waiting for another worker building worker-sandbox:py3.13"]
    assert [p.name for p in (tmp_path / "locks").iterdir()] == ["image-worker-sandbox_py3.13"]


def test_other_images_do_not_wait(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKER_HOME", str(tmp_path))
    said: list[str] = []
    with one_builder("worker-sandbox:py3.13", said.append):
        with one_builder("worker-sandbox:latest", said.append):
            pass
    assert said == []


def _one_builder_run(name: str, said: list[str], order: list[str]) -> None:
    with one_builder(name, said.append):
        order.append("second ran")
