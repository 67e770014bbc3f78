"""Where the checkout is (egohorizon.repo_conf): conf/ and the Lightning glue (models/, datamodules/) are
folders of the checkout, not installed packages, and are found from the working folder, from
$EGOHORIZON_CONF, or from the editable install's source (PEP 610), with a clear error elsewhere."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest
from conftest import REPO_ROOT

from egohorizon import repo_conf
from egohorizon.errors import ConfigError


def test_only_egohorizon_is_installed():
    """`models` and `datamodules` would shadow other projects' packages of those names in site-packages."""
    top_level = metadata.distribution("egohorizon").read_text("top_level.txt").split()
    assert top_level == ["egohorizon"]


def test_the_checkout_is_found_from_the_working_folder_and_below_it(monkeypatch):
    monkeypatch.delenv("EGOHORIZON_CONF", raising=False)
    monkeypatch.chdir(REPO_ROOT / "src" / "egohorizon")
    assert repo_conf.repo_root() == REPO_ROOT
    assert repo_conf.conf_dir() == REPO_ROOT / "conf"


def test_another_checkout_in_the_working_folder_wins_over_the_installed_one(monkeypatch, tmp_path):
    """A second checkout or worktree uses its own configs and glue, not the editable install's."""
    monkeypatch.delenv("EGOHORIZON_CONF", raising=False)
    for folder in ("conf", "models", "datamodules"):
        (tmp_path / folder).mkdir()
    (tmp_path / "conf" / "eval.yaml").write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    assert repo_conf.repo_root() == tmp_path


def test_outside_any_checkout_the_editable_source_is_used(monkeypatch, tmp_path):
    monkeypatch.delenv("EGOHORIZON_CONF", raising=False)
    monkeypatch.chdir(tmp_path)
    assert repo_conf.repo_root() == REPO_ROOT  # the Makefile installs in editable mode


def test_outside_a_checkout_without_an_editable_install_the_error_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv("EGOHORIZON_CONF", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(repo_conf, "_editable_source", lambda: None)
    with pytest.raises(ConfigError, match="not inside an egohorizon checkout.*EGOHORIZON_CONF"):
        repo_conf.repo_root()


def test_egohorizon_conf_names_the_checkout(monkeypatch, tmp_path):
    (tmp_path / "conf").mkdir()
    monkeypatch.setenv("EGOHORIZON_CONF", str(tmp_path / "conf"))
    assert repo_conf.repo_root() == tmp_path.resolve()
    with pytest.raises(ConfigError, match="no eval.yaml"):
        repo_conf.conf_dir()


def test_glue_importable_puts_the_checkout_first_once(monkeypatch):
    monkeypatch.delenv("EGOHORIZON_CONF", raising=False)
    monkeypatch.chdir(REPO_ROOT)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(REPO_ROOT)])
    assert repo_conf.glue_importable() == REPO_ROOT
    repo_conf.glue_importable()
    assert sys.path[0] == str(REPO_ROOT) and sys.path.count(str(REPO_ROOT)) == 1


def test_the_editable_source_is_found_when_the_build_metadata_comes_first(monkeypatch, tmp_path):
    """src/egohorizon.egg-info (written by the editable build, no direct_url.json) early on sys.path."""
    from conftest import REPO_ROOT as root

    monkeypatch.delenv("EGOHORIZON_CONF", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(root / "src"))
    assert repo_conf._editable_source() == root
