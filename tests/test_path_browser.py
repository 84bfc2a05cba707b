"""The Studio path browser serves the project's folder, sparkmark's home and the
configured S3 endpoint, and nothing else: no other folder, however it is written (an
absolute path, ``..``, a symlink), and no other protocol (an ``http://`` path would
make the server fetch it)."""

from __future__ import annotations

import pytest

from sparkmark.console.studio import browse
from sparkmark.errors import ArgumentError
from sparkmark.settings import Settings


@pytest.fixture
def settings(tmp_path):
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    (project / "jobs" / "orders.py").write_text("print(1)\n")
    (project / "sparkmark.toml").write_text("")
    (project / "escape").symlink_to("/etc")
    return Settings.from_env(
        {"SPARKMARK_HOME": str(tmp_path / "home"), "SPARKMARK_CONFIG": str(project / "sparkmark.toml")}
    )


def test_the_project_and_the_home_are_served(settings):
    roots = browse(settings, "")["entries"]
    project = settings.config.resolve().parent
    assert [r["path"] for r in roots] == [str(project), str(settings.home)]
    listed = browse(settings, str(project))
    assert [e["name"] for e in listed["entries"] if e["dir"]] == ["jobs"]
    assert {"escape", "sparkmark.toml"} <= {e["name"] for e in listed["entries"]}  # shown, not opened
    assert listed["parent"] == ""  # up from a root is the roots, not the folder above
    assert [e["name"] for e in browse(settings, str(project / "jobs"))["entries"]] == ["orders.py"]


@pytest.mark.parametrize(
    "path",
    [
        "/etc",
        "/",
        "{project}/../..",
        "{project}/escape",
        "{project}/escape/",
        "http://127.0.0.1:9/",
        "https://example.com/",
        "file:///etc",
        "memory://x",
    ],
)
def test_anything_else_is_refused_in_one_line(settings, path):
    given = path.format(project=settings.config.resolve().parent)
    with pytest.raises(ArgumentError) as refused:
        browse(settings, given)
    assert "\n" not in str(refused.value) and given in str(refused.value)


def test_s3_needs_the_configured_endpoint(settings):
    with pytest.raises(ArgumentError, match="no S3 endpoint is configured"):
        browse(settings, "s3://bucket/")
