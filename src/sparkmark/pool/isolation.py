"""What one job run may leave in a warm process that the next job must never find, and
the check made after every run.

A warm process hosts one job after another (``pool/worker.py``). Some of what a run
changes is put back (the environment, ``sys.argv``, ``sys.path``, the modules it
imported from its own folders, the masking registry, the working directory, Spark's
per-session state). What cannot be put back with certainty retires the process
instead, so the next job gets a new one:

- a thread the run started that is still alive (it could read the next job's
  ``sys.argv`` or environment);
- a replaced function or class on a loaded module or on ``builtins`` (a monkeypatch
  would run inside the next job): put back at once, so the host's own code after
  the run calls the originals, and the process is retired all the same, since what
  the patch did meanwhile cannot be known;
- a change to the SparkContext's own settings (``sc._conf``) or to Hadoop's;
- any secret the run was given (a secret-named argument, a connection's password): a
  process cannot prove that no copy of it is left somewhere in its memory, in the JVM
  or in a library's cache, so a process that held one never hosts another job.

:class:`ProcessState` is taken before the run; :meth:`ProcessState.residue` says,
after it, why the process must be retired, or None.
"""

from __future__ import annotations

import builtins
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..engine.masking import known_secrets

# Replaced by PySpark itself for every new session (``install_exception_handler`` wraps
# ``py4j.protocol.get_return_value`` afresh), so a run's replacement is undone by the next
# run's session; a patch of the original in ``py4j.protocol`` is still found.
RESET_BY_SPARK = frozenset({("py4j.java_gateway", "get_return_value")})

# Long enough for a thread the run ended (a reporter, a timer being cancelled) to go;
# a thread still alive after it was left running by the run.
THREAD_GRACE_SECONDS = 1.0


def _replaceable(value: Any) -> bool:
    """A module attribute whose replacement is a patch: a function or a class (data
    such as counters and caches change in ordinary use)."""
    return callable(value) and not isinstance(value, ModuleType)


def _namespaces(modules: dict[str, ModuleType]) -> dict[str, dict[str, Any]]:
    """A shallow copy of each module's namespace (a copy per module is cheap; which of
    its values are functions or classes is asked only of those that changed)."""
    found: dict[str, dict[str, Any]] = {}
    for name, module in modules.items():
        try:
            found[name] = dict(vars(module))
        except TypeError:
            continue
    return found


@dataclass
class ProcessState:
    """A warm process's state before a job run, to compare with after it."""

    threads: set[int] = field(default_factory=set)
    modules: dict[str, ModuleType] = field(default_factory=dict)
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    builtin_names: frozenset[str] = frozenset()
    secrets: frozenset[str] = frozenset()
    spark_conf: str | None = None
    replaced: list[str] | None = None  # found and put back by put_back(), once it ran

    @classmethod
    def take(cls, spark_conf: Callable[[], str | None] = lambda: None) -> ProcessState:
        modules = {name: m for name, m in list(sys.modules.items()) if isinstance(m, ModuleType)}
        modules.pop("__main__", None)  # the run's script runs as __main__ and is put back
        return cls(
            threads={t.ident or 0 for t in threading.enumerate()},
            modules=modules,
            namespaces=_namespaces(modules),
            builtin_names=frozenset(vars(builtins)),
            secrets=known_secrets(),
            spark_conf=spark_conf(),
        )

    # ------------------------------------------------------------------ after the run
    def threads_left(self, grace: float = THREAD_GRACE_SECONDS) -> list[str]:
        """Names of the threads started since, still alive after ``grace`` seconds."""
        deadline = time.monotonic() + grace
        for thread in threading.enumerate():
            if (thread.ident or 0) not in self.threads:
                thread.join(timeout=max(0.0, deadline - time.monotonic()))
        return sorted(
            t.name for t in threading.enumerate() if t.is_alive() and (t.ident or 0) not in self.threads
        )

    def put_back(self) -> list[str]:
        """Every function or class replaced on a module since (builtins included) put
        back, and builtins the run added removed, at once after the run, before the
        host's own code (its messages, its records) calls one of them; returns
        ``module.name`` of each, also kept for :meth:`residue`."""
        replaced = []
        for module, before_names in self.namespaces.items():
            namespace = vars(self.modules[module])
            for attr, before in before_names.items():
                if (
                    namespace.get(attr) is before
                    or not _replaceable(before)
                    or (module, attr) in RESET_BY_SPARK
                ):
                    continue
                namespace[attr] = before
                replaced.append(f"{module}.{attr}")
        for name in sorted(set(vars(builtins)) - self.builtin_names):
            delattr(builtins, name)
            replaced.append(f"builtins.{name}")
        self.replaced = sorted(replaced)
        return self.replaced

    def secrets_given(self) -> bool:
        return bool(known_secrets() - self.secrets)

    def residue(self, spark_conf: Callable[[], str | None] = lambda: None) -> str | None:
        """Why this process must not host another job after the run, or None."""
        reasons: list[str] = []
        if self.secrets_given():
            reasons.append("the run was given secrets")
        left = self.threads_left()
        if left:
            reasons.append(f"the run left threads running ({', '.join(left[:3])})")
        patched = self.put_back() if self.replaced is None else self.replaced
        if patched:
            more = f" and {len(patched) - 3} more" if len(patched) > 3 else ""
            reasons.append(f"the run replaced {', '.join(patched[:3])}{more}")
        if self.spark_conf is not None and spark_conf() != self.spark_conf:
            reasons.append("the run changed the SparkContext's settings")
        return "; ".join(reasons) or None
