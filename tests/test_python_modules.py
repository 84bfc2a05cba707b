"""Glue's --additional-python-modules for jobs as for sessions: pip installs them once
per machine, first on the run's path; the table formats' Python packages come with
--datalake-formats (Glue provides `delta` for Delta Lake)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest

from sparkmark import python_modules
from sparkmark.errors import ArgumentError


def wheel(folder: Path, name: str, code: str) -> Path:
    """A pure-Python wheel holding the module ``name`` (what pip installs from a file)."""
    dist = f"{name}-1.0.dist-info"
    files = {
        f"{name}.py": code,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist}/RECORD"] = "\n".join([*record, f"{dist}/RECORD,,"]) + "\n"
    target = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as out:
        for path, text in files.items():
            out.writestr(path, text)
    return target


def test_the_list_is_glues_comma_separated_one_and_installer_options_split_on_spaces():
    assert python_modules.requested(" pandas==2.2.3, s3://b/x.whl ,,pandas==2.2.3") == [
        "pandas==2.2.3",
        "s3://b/x.whl",
    ]
    assert python_modules.requested(None) == [] and python_modules.requested("") == []
    assert python_modules.installer_options("-r  --no-cache-dir") == ["-r", "--no-cache-dir"]


def test_modules_are_installed_once_and_a_bad_one_fails_in_one_line_naming_it(tmp_path):
    built = wheel(tmp_path, "sm_greeting", "WORD = 'hello'\n")
    home = tmp_path / "home"
    folder = python_modules.install([str(built)], home)
    assert folder is not None and (folder / "sm_greeting.py").read_text() == "WORD = 'hello'\n"
    assert python_modules.install([str(built)], home) == folder  # the same list: installed already
    assert python_modules.install([], home) is None
    with pytest.raises(ArgumentError) as failed:
        python_modules.install([str(tmp_path / "missing-1.0-py3-none-any.whl")], home)
    message = str(failed.value)
    assert message.startswith("--additional-python-modules ") and "missing-1.0" in message
    assert "\n" not in message
    assert [p.name for p in (home / "python-modules").iterdir()] == [folder.name]  # nothing half-done kept


def test_a_requirements_file_is_read_with_the_r_installer_option(tmp_path):
    built = wheel(tmp_path, "sm_req", "VALUE = 3\n")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"{built}\n")
    folders = python_modules.for_run(
        {"additional-python-modules": str(requirements), "python-modules-installer-option": "-r"},
        [],
        tmp_path / "home",
    )
    assert len(folders) == 1 and (folders[0] / "sm_req.py").is_file()


def test_a_job_imports_its_additional_python_modules(tmp_path, monkeypatch, capfd):
    """`sparkmark run job.py --additional-python-modules <wheel>`: the script imports it,
    as on Glue (a job's modules were ignored and the import failed)."""
    from sparkmark.cli.run import run
    from sparkmark.host import RunRequest

    monkeypatch.setenv("SPARKMARK_HOME", str(tmp_path / "home"))
    built = wheel(tmp_path, "sm_extra", "def shout(x):\n    return x.upper()\n")
    script = tmp_path / "job.py"
    script.write_text("import sm_extra\nprint('said', sm_extra.shout('merge'))\n")
    arguments = ["--JOB_NAME", "modules", "--additional-python-modules", str(built)]
    assert run(RunRequest(script=str(script), arguments=arguments), keep_output=True) == 0
    assert "said MERGE" in capfd.readouterr().out


@pytest.mark.slow
def test_datalake_formats_delta_brings_deltas_python_package(tmp_path):
    """Glue's --datalake-formats delta gives a job Delta's jars and its Python package, so
    `from delta.tables import DeltaTable` imports (fetched from PyPI, without PySpark)."""
    folders = python_modules.for_run({}, ["delta"], tmp_path / "home")
    assert len(folders) == 1
    assert (folders[0] / "delta" / "tables.py").is_file()
    assert not (folders[0] / "pyspark").exists()
