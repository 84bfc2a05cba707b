"""Glue's argument rules, as Job.from_args applies them."""

from __future__ import annotations

import logging

import pytest

from sparkmark import ArgumentError
from sparkmark.args import resolve, split_pairs
from sparkmark.engine.masking import MASK, mask_arguments, mask_text
from sparkmark.engine.models import BookmarkOption


def test_pairs_and_equals_form():
    assert split_pairs(["--a", "1", "--b=2", "--c", "--x"]) == {"a": "1", "b": "2", "c": "--x"}


def test_a_repeated_conf_applies_every_setting_and_another_repeated_name_warns(caplog):
    """Glue takes several Spark settings in one ``--conf`` (``k=v --conf k2=v2``); given
    as separate ``--conf`` arguments, as on spark-submit, every one is applied. Of any
    other repeated name the last wins, and a warning names it without its values."""
    from sparkmark.table_formats import glue_conf

    caplog.set_level(logging.WARNING, logger="sparkmark")  # whatever an earlier test set its level to
    pairs = split_pairs(
        ["--conf", "spark.a=1", "--conf=spark.b=2 --conf spark.c=3", "--token", "s3cret", "--token", "other"]
    )
    assert glue_conf(pairs["conf"]) == {"spark.a": "1", "spark.b": "2", "spark.c": "3"}
    assert pairs["token"] == "other"
    warned = [r.getMessage() for r in caplog.records if r.name == "sparkmark.args"]
    assert warned == ['job argument "--token" is given more than once: the last one is used']
    assert mask_text(warned[0]) == warned[0]  # the line reads the same where logs are masked
    assert "s3cret" not in caplog.text and "other" not in caplog.text
    assert glue_conf(split_pairs(["--conf", "spark.a=1"])["conf"]) == {"spark.a": "1"}


def test_flag_without_value_and_stray_token_are_errors():
    with pytest.raises(ArgumentError, match="--last: expected one argument"):
        split_pairs(["--last"])
    with pytest.raises(ArgumentError, match="unexpected argument 'oops'"):
        split_pairs(["oops"])


def test_defaults_to_disable_and_script_name():
    got = resolve([], default_job_name="my_job")
    assert got.job_name == "my_job"
    assert got.bookmark_option is BookmarkOption.DISABLE
    assert got.values["job_bookmark_option"] == "job-bookmark-disable"


def test_invalid_bookmark_option():
    with pytest.raises(ArgumentError, match="invalid choice: 'job-bookmark-on'"):
        resolve(["--JOB_NAME", "j", "--job-bookmark-option", "job-bookmark-on"])


@pytest.mark.parametrize(
    "legacy,expected",
    [
        ("continuation-enabled", BookmarkOption.ENABLE),
        ("continuation-readonly", BookmarkOption.PAUSE),
        ("continuation-ignore", BookmarkOption.DISABLE),
    ],
)
def test_legacy_continuation_option(legacy, expected):
    assert resolve(["--JOB_NAME", "j", "--continuation-option", legacy]).bookmark_option is expected


def test_job_bookmark_option_wins_over_continuation():
    got = resolve(
        [
            "--JOB_NAME",
            "j",
            "--continuation-option",
            "continuation-ignore",
            "--job-bookmark-option",
            "job-bookmark-enable",
        ]
    )
    assert got.bookmark_option is BookmarkOption.ENABLE


def test_range_needs_both_and_pause():
    with pytest.raises(ArgumentError, match="Missing option or value for --job-bookmark-to"):
        resolve(
            ["--JOB_NAME", "j", "--job-bookmark-option", "job-bookmark-pause", "--job-bookmark-from", "jr_1"]
        )
    with pytest.raises(ArgumentError, match="Invalid option"):
        resolve(
            [
                "--JOB_NAME",
                "j",
                "--job-bookmark-option",
                "job-bookmark-enable",
                "--job-bookmark-from",
                "jr_1",
                "--job-bookmark-to",
                "jr_2",
            ]
        )
    got = resolve(
        [
            "--JOB_NAME",
            "j",
            "--job-bookmark-option",
            "job-bookmark-pause",
            "--job-bookmark-from",
            "jr_1",
            "--job-bookmark-to",
            "jr_2",
        ]
    )
    assert (got.bookmark_from, got.bookmark_to) == ("jr_1", "jr_2")
    assert got.values["job_bookmark_from"] == "jr_1"


def test_tempdir_aliases():
    assert resolve(["--JOB_NAME", "j", "--RedshiftTempDir", "/t"]).values["TempDir"] == "/t"
    got = resolve(["--JOB_NAME", "j", "--TempDir", "/u"])
    assert got.temp_dir == "/u" and got.values["RedshiftTempDir"] == "/u"


def test_job_name_required_without_script():
    with pytest.raises(ArgumentError, match="--JOB_NAME is required"):
        resolve([])


def test_masking_hides_secrets():
    masked = mask_arguments(
        {
            "db_password": "hunter2",
            "api-key": "k",
            "url": "postgresql://bob:s3cret@db/x",
            "conn": "jdbc:x://h/db?user=a&password=p2&x=1",
            "input": "/data",
        }
    )
    assert masked["db_password"] == MASK and masked["api-key"] == MASK
    assert masked["url"] == f"postgresql://bob:{MASK}@db/x"
    assert "p2" not in masked["conn"] and masked["conn"].endswith("&x=1")
    assert masked["input"] == "/data"
