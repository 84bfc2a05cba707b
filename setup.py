"""The one thing pyproject.toml cannot say: the wheel carries a ``.pth`` file at the top
of site-packages, so that every Python of an environment with sparkmark installed
resolves ``import awsglue`` to sparkmark's façade (``sparkmark/glue/shim.py``)."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HOOK = Path(__file__).parent / "src" / "sparkmark" / "glue" / "sparkmark-awsglue.pth"


class BuildWithImportHook(build_py):
    def run(self) -> None:
        super().run()
        self.copy_file(str(HOOK), str(Path(self.build_lib) / HOOK.name))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), str(Path(self.build_lib) / HOOK.name)]


setup(cmdclass={"build_py": BuildWithImportHook})
