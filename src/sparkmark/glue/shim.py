"""Make ``import awsglue…`` load sparkmark's façade.

``install()`` puts an import hook first on ``sys.meta_path``: ``awsglue`` and
``awsglue.<x>`` resolve to ``sparkmark.glue`` and ``sparkmark.glue.<x>``, even
when AWS's own awsglue library is installed too (the hook runs before the normal
path search).

The wheel carries ``sparkmark-awsglue.pth`` at the top of site-packages (``setup.py``
puts it there): every Python of an environment sparkmark is installed in runs
``install_at_start_up()``, so ``import awsglue`` works in a plain ``python``, ``pytest``
or notebook. An editable install (the repository's own) gets the same file from
``sparkmark glue install-shim``. ``SPARKMARK_AWSGLUE=off`` (or ``aws``) leaves
``awsglue`` to AWS's own library, for one process or, exported, for all.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import site
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..settings import Settings


ALIAS = "awsglue"
TARGET = "sparkmark.glue"
ALIASES = {
    "awsglue": "sparkmark.glue",
    "awsgluedq": "sparkmark.glue.dq",
    "awsglueml": "sparkmark.glue.ml",
}  # Glue name → ours
PTH_NAME = "sparkmark-awsglue.pth"
# What that file holds (the shipped copy, glue/sparkmark-awsglue.pth, is this line).
PTH_LINE = "import sparkmark.glue.shim as _sparkmark_shim; _sparkmark_shim.install_at_start_up()\n"
# Glue Studio's visual transforms: a generated script imports each as a module of its own
# (``import gs_flatten``), which adds its method to DynamicFrame; here they are all
# methods of sparkmark's DynamicFrame (``glue/visual.py``), and each module is that one.
VISUAL_MODULES = (
    "gs_flatten",
    "gs_explode",
    "gs_uuid",
    "gs_concat",
    "gs_split",
    "gs_array_to_cols",
    "gs_to_timestamp",
    "gs_format_timestamp",
    "gs_derived",
)
VISUAL_TARGET = "sparkmark.glue.visual"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:
        pass  # the target module is already executed


class AwsGlueFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname in VISUAL_MODULES:
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(VISUAL_TARGET))
        alias = next((a for a in ALIASES if fullname == a or fullname.startswith(a + ".")), None)
        if alias is None:
            return None
        real = ALIASES[alias] + fullname[len(alias) :]
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            found = None
        if found is None:
            return None
        is_package = found.submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=is_package)


def install(settings: Settings | None = None) -> bool:
    """Install the hook (once). False when turned off with SPARKMARK_AWSGLUE=off."""
    # At interpreter start-up (the .pth hook) Settings is not built: importing pydantic
    # would cost every Python process, PySpark's workers too, a third of a second. The
    # hook reads its declared variable itself.
    awsglue = settings.awsglue if settings is not None else os.environ.get("SPARKMARK_AWSGLUE", "on")
    if awsglue.lower() in ("off", "0", "false", "aws"):
        return False
    if not any(isinstance(f, AwsGlueFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AwsGlueFinder())
    for name in [n for n in sys.modules if any(n == a or n.startswith(a + ".") for a in ALIASES)]:
        if not getattr(sys.modules[name], "__name__", "").startswith(TARGET):
            del sys.modules[name]  # an earlier import of AWS's own library
    return True


def install_at_start_up() -> None:
    """The ``.pth`` file's call, at every interpreter start: install the hook, and never
    stop Python from starting (a broken hook only leaves ``awsglue`` unresolved)."""
    try:
        install()
    except Exception as exc:  # noqa: BLE001 - a failure here must not break every Python process
        sys.stderr.write(f"sparkmark: the awsglue import hook was not installed: {exc}\n")


def pth_path() -> Path:
    return Path(site.getsitepackages()[0]) / PTH_NAME


def write_pth() -> Path:
    path = pth_path()
    path.write_text(PTH_LINE, encoding="utf-8")
    return path


def remove_pth() -> bool:
    path = pth_path()
    if path.exists():
        path.unlink()
        return True
    return False
