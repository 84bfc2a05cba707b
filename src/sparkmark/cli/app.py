"""The ``sparkmark`` command: run jobs, and read and control bookmarks and runs."""

from __future__ import annotations

import inspect
import logging
import os
import sys
import traceback

import typer
from rich.markup import escape

from ..engine import storage
from ..engine.masking import mask_logging, mask_text
from ..errors import SparkmarkError
from ..settings import Settings
from . import output
from .context import end_call
from .output import debug_enabled, err_console, fail, one_line_errors
from .run import run_script

# The sub-commands, imported only when named: `sparkmark run` (and a run skipped for
# want of new data) should not pay for the console's, the API's or the scheduler's
# imports. name: (module, attribute, "group" | "command" | "command, one-line errors")
SUBCOMMANDS = {
    "bookmark": ("bookmark", "app", "group"),
    "runs": ("runs", "app", "group"),
    "glue": ("glue", "app", "group"),
    "catalog": ("catalog", "app", "group"),
    "crawler": ("crawler", "app", "group"),
    "outputs": ("outputs", "app", "group"),
    "quality": ("quality", "app", "group"),
    "studio": ("studio", "app", "group"),
    "workflow": ("workflows", "workflow_app", "group"),
    "trigger": ("workflows", "trigger_app", "group"),
    "job": ("workflows", "job_app", "group"),
    "scheduler": ("workflows", "scheduler_command", "command, one-line errors"),
    "api": ("api", "api_command", "command"),
    "console": ("console", "console_command", "command"),
    "aws-profile": ("profile", "profile_command", "command"),
    "monitoring": ("monitoring", "app", "group"),
    "connectors": ("connectors", "app", "group"),
    "runtime": ("runtime", "app", "group"),
    "upgrade-check": ("upgrade", "upgrade_check_command", "command, one-line errors"),
    "doctor": ("doctor", "doctor_command", "command, one-line errors"),
    "store": ("store", "app", "group"),
}

_TAKES_JOB_ARGS = {"upgrade-check"}  # commands that pass Glue-style job arguments on, as `run` does

_app = typer.Typer(
    help="Glue-style job bookmarks on any Spark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@_app.callback()
def _options(
    ctx: typer.Context,
    debug: bool = typer.Option(
        False, "--debug", help="On a failure, print the traceback after the error line (or SPARKMARK_DEBUG)"
    ),
) -> None:
    if debug:
        output.show_tracebacks()
    ctx.call_on_close(end_call)  # the call's one App (cli.context) is closed with it


def register(names: list[str] | None = None) -> typer.Typer:
    """Add the named sub-commands to the app (all of them when None); returns it."""
    import importlib

    for name in SUBCOMMANDS if names is None else names:
        module_name, attribute, kind = SUBCOMMANDS[name]
        target = getattr(importlib.import_module(f"{__package__}.{module_name}"), attribute)
        if any(getattr(g, "name", None) == name for g in _app.registered_groups) or any(
            c.name == name for c in _app.registered_commands
        ):
            continue
        if kind == "group":
            _app.add_typer(target, name=name)
        else:
            settings = (
                {"allow_extra_args": True, "ignore_unknown_options": True}
                if name in _TAKES_JOB_ARGS
                else None
            )
            _app.command(name, context_settings=settings)(
                one_line_errors(target) if kind.endswith("one-line errors") else target
            )
    return _app


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole command, for tests and for embedding: every sub-command
        return register(None)
    raise AttributeError(name)


def _named_command(argv: list[str]) -> str | None:
    """The sub-command the command line names (the first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


@_app.command(
    "run",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def run(
    ctx: typer.Context,
    script: str = typer.Argument(
        ..., help="The PySpark job script: a path, or a URL such as s3://bucket/job.py"
    ),
    skip_if_no_new_data: bool = typer.Option(
        False,
        "--skip-if-no-new-data",
        help="Before starting Spark, list the job's file sources; when none has a new file "
        "(and the script and arguments are those of the last successful run), record a "
        "skipped run and exit. Goes before SCRIPT.",
    ),
    until_caught_up: bool = typer.Option(
        False,
        "--until-caught-up",
        help="A streaming job processes what its sources hold now, in as many micro-batches "
        "as its options allow, then returns (and job.commit() ends the run). Goes before SCRIPT.",
    ),
    max_batches: int | None = typer.Option(
        None,
        "--max-batches",
        help="A streaming job returns after N micro-batches. Goes before SCRIPT.",
    ),
    remote: str | None = typer.Option(
        None,
        "--remote",
        help="Run the job's Spark work on a Spark Connect server, sc://host:port (or set "
        "SPARK_REMOTE); listing, state and commits stay here. Goes before SCRIPT.",
    ),
    glue_version: str | None = typer.Option(
        None,
        "--glue-version",
        help="Run on the Spark of this Glue version (5.0, 5.1, 6.0): in its runtime, which "
        "`sparkmark runtime add` makes. Goes before SCRIPT.",
    ),
) -> None:
    """Run SCRIPT with Glue-style arguments, e.g. --JOB_NAME n --job-bookmark-option
    job-bookmark-enable --my-arg v. Prints the run id; exits non-zero when the run fails."""
    if glue_version is not None:
        _in_runtime(glue_version)
    raise typer.Exit(
        run_script(
            script,
            list(ctx.args),
            skip_if_no_new_data=skip_if_no_new_data,
            until_caught_up=until_caught_up,
            max_batches=max_batches,
            remote=remote,
        )
    )


def _in_runtime(glue_version: str) -> None:
    """Carry on in this process when it is the Glue version's runtime; else become the
    same command in that runtime's Python (which finds itself the right one)."""
    from .. import runtimes

    try:
        runtime = runtimes.for_version(Settings.from_env().runtimes_dir, glue_version)
    except SparkmarkError as exc:
        fail(str(exc))
    if not runtime.own:
        sys.stdout.flush()
        os.execv(runtime.python, [runtime.python, "-m", "sparkmark", *sys.argv[1:]])


def _one_line(paragraph: str) -> str:
    """A paragraph of help as one line, unless it is a list or an example."""
    lines = paragraph.splitlines()
    if any(line.startswith((" ", "-", "*", "$")) for line in lines[1:]):
        return paragraph
    return " ".join(paragraph.split())


def _for_the_terminal(command) -> None:
    """Help written for the terminal: a command's one-line summary is its first
    paragraph as one sentence (a docstring's line breaks are for the source, not the
    screen), and a flag shows no ``<bool>`` type, as it takes no value."""
    if command.help:
        paragraphs = inspect.cleandoc(command.help).split("\n\n")
        command.help = "\n\n".join(_one_line(p) for p in paragraphs)
        if not command.short_help:
            command.short_help = _one_line(paragraphs[0])
    for param in command.params:
        if getattr(param, "is_flag", False) or getattr(param, "count", False):
            param.metavar = ""
    made = command.get_help_option

    def help_option(ctx, _made=made):
        option = _made(ctx)
        if option is not None:
            option.metavar = ""
        return option

    command.get_help_option = help_option
    for sub in (getattr(command, "commands", None) or {}).values():
        _for_the_terminal(sub)


def main() -> None:
    try:
        settings = Settings.from_env()
        level = settings.log_level.upper()
        storage.configure(settings)  # s3:// for commands that list or read without Spark
    except SparkmarkError:
        level = "INFO"  # the command itself says what is wrong with the settings
    logging.basicConfig(
        level=level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    mask_logging()
    for noisy in ("py4j", "sqlalchemy", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    from ..host.handover import launched_document, record_exit

    sent = launched_document()
    if sent is not None and "argv" in sent:
        sys.argv[1:] = sent["argv"]
    request = sent.get("run") if sent is not None else None
    if request is None:
        named = _named_command(sys.argv[1:])
        register([named] if named in SUBCOMMANDS else [] if named == "run" else None)
    try:
        if request is not None:  # a job's run, handed over by a scheduler
            from ..host import RunRequest
            from .run import run as run_request

            raise SystemExit(run_request(RunRequest.checked(request)))
        command = typer.main.get_command(_app)
        _for_the_terminal(command)
        command()
    except SystemExit as exc:
        code = exc.code
        record_exit(code if isinstance(code, int) else (0 if code is None else 1))
        raise
    except KeyboardInterrupt:
        err_console.print("[bold red]error:[/] interrupted", highlight=False)
        record_exit(130)
        raise SystemExit(130) from None
    except Exception as exc:  # noqa: BLE001 - every failure ends in one line; --debug shows the rest
        if debug_enabled():
            err_console.print(
                mask_text("".join(traceback.format_exception(exc)).rstrip()), highlight=False, markup=False
            )
        text = str(exc).strip().splitlines()
        what = (
            text[0]
            if isinstance(exc, SparkmarkError) and text
            else f"{type(exc).__name__}: {text[0] if text else ''}"
        )
        err_console.print(f"[bold red]error:[/] {escape(mask_text(what))}", highlight=False)
        record_exit(1)
        raise SystemExit(1) from None
    record_exit(0)


if __name__ == "__main__":
    main()
