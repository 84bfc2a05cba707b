"""Make ``import awsglue…`` load sparkmark's façade.

``install()`` puts an import hook first on ``sys.meta_path``: ``awsglue`` and
``awsglue.<x>`` resolve to ``sparkmark.glue`` and ``sparkmark.glue.<x>``, even
when AWS's own awsglue library is installed too (the hook runs before the normal
path search). ``sparkmark run`` installs it for the script it runs; for
spark-submit and notebooks, ``sparkmark glue install-shim`` writes a ``.pth``
file that installs it at interpreter start-up, and ``SPARKMARK_AWSGLUE=off``
turns the hook off for one process.
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


def pth_path() -> Path:
    return Path(site.getsitepackages()[0]) / PTH_NAME


def write_pth() -> Path:
    path = pth_path()
    path.write_text("import sparkmark.glue.shim as _s; _s.install()\n", encoding="utf-8")
    return path


def remove_pth() -> bool:
    path = pth_path()
    if path.exists():
        path.unlink()
        return True
    return False
