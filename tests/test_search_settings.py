"""The search's settings (worker/search/settings.py): each one's config key and flag reach the
profile of a run, a flag over the file over the profile's default, and bounds are enforced."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from policies.config import load_config
from policies.errors import ConfigError
from worker.cli.loop_flags import add_loop_arguments, search_overrides
from worker.search.profile import BUNDLED, HOSTED, profile_for
from worker.search.settings import SETTINGS, config_fragment


def profile(repo: Path, *flags: str, bundled: bool = False):
    parser = argparse.ArgumentParser()
    add_loop_arguments(parser)
    args = parser.parse_args(list(flags))
    config = load_config(repo, overrides=search_overrides(args), search=config_fragment())
    return profile_for(bundled=bundled, config=config)


def test_unset_settings_are_the_profiles_defaults(tmp_path: Path) -> None:
    assert profile(tmp_path) == HOSTED
    assert profile(tmp_path, bundled=True) == BUNDLED
    assert (HOSTED.edit_samples, BUNDLED.edit_samples) == (1, 5)
    assert (HOSTED.verify_ahead, BUNDLED.verify_ahead) == (True, False)


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_each_setting_is_a_config_key_and_a_flag_the_flag_winning(tmp_path, setting) -> None:
    file_value: object
    if setting.kind is bool:
        in_file, file_value = "true", True
        flag, flagged = [f"--no-{setting.flag[2:]}"], False
    else:
        assert setting.high is not None
        in_file, file_value = str(setting.high), setting.high
        flag, flagged = [setting.flag, str(setting.high - 1)], setting.high - 1
    (tmp_path / "worker.toml").write_text(f"{setting.name} = {in_file}\n")
    for bundled in (False, True):
        assert getattr(profile(tmp_path, bundled=bundled), setting.name) == file_value
        assert getattr(profile(tmp_path, *flag, bundled=bundled), setting.name) == flagged


def test_a_count_out_of_bounds_is_refused_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "worker.toml").write_text("edit_samples = 17\n")
    with pytest.raises(ConfigError, match="edit_samples"):
        profile(tmp_path)
    (tmp_path / "worker.toml").write_text("")
    with pytest.raises(ConfigError, match="second_choices"):
        profile(tmp_path, "--second-choices", "-1")
