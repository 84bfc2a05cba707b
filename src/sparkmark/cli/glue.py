"""``sparkmark glue``: make ``import awsglue`` resolve to sparkmark outside ``sparkmark run``."""

from __future__ import annotations

import typer

from ..glue import shim
from .output import console

app = typer.Typer(help="The awsglue import shim for spark-submit and notebooks.", no_args_is_help=True)


@app.command("install-shim")
def install_shim() -> None:
    """Write a .pth file so every Python of this environment resolves awsglue to sparkmark."""
    path = shim.write_pth()
    console.print(
        f"installed {path}: `import awsglue` now loads sparkmark.glue in this environment "
        "(SPARKMARK_AWSGLUE=off turns it off for one process)"
    )


@app.command("uninstall-shim")
def uninstall_shim() -> None:
    """Remove the .pth file written by install-shim."""
    removed = shim.remove_pth()
    console.print(f"removed {shim.pth_path()}" if removed else "the shim was not installed")
