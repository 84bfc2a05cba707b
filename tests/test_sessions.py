"""Glue interactive sessions on sparkmark's endpoint, driven with boto3 as Glue
notebooks and dbt-glue drive them: CreateSession until READY, RunStatement and
GetStatement until the statement is AVAILABLE, cancel, stop, delete, list. Semantics
from AWS's API reference (Session, Statement, StatementOutput) and the states its
clients wait for. Each session is a warm process of its own, with a real Spark."""

from __future__ import annotations

import contextlib
import os
import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from sparkmark import serving
from sparkmark.access import resolve_token
from sparkmark.api.server import create_app, listen_of, own_secret
from sparkmark.api.service import Service
from sparkmark.engine.schema import utcnow
from sparkmark.pool.pool import close_shared
from sparkmark.settings import Settings

ROLE = "arn:aws:iam::123456789012:role/GlueSessions"
ENDED = ("AVAILABLE", "CANCELLED", "ERROR")


def wait_for(check, seconds: float, what: str):
    """Poll ``check`` until it returns something truthy (what a client does)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def start_endpoint(root, pool: str):
    """The Glue endpoint in a thread of this process, on a home under ``root`` whose
    project file has ``[pool]`` ``pool``; (running, token, settings, service)."""
    config = root / "sparkmark.toml"
    config.write_text(f"[pool]\n{pool}\n", encoding="utf-8")
    settings = Settings.from_env(
        {**os.environ, "SPARKMARK_HOME": str(root / "home"), "SPARKMARK_CONFIG": str(config)}
    )
    service = Service(settings)
    listen = listen_of(settings, "127.0.0.1", 0)
    running = serving.start_in_thread(create_app(service, listen, own_secret()), listen, "Glue API endpoint")
    service.glue_url, service.glue_token = (
        running.url,
        listen.token,
    )  # as `sparkmark api` does once it listens
    return running, resolve_token(None, settings.home), settings, service


def glue_client(url: str, token: str):
    return boto3.client(
        "glue",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="notebook",
        aws_secret_access_key=token,
        config=Config(retries={"max_attempts": 1}),
    )


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory, spark):  # spark: the suite's JVM is up before the pool's
    running, token, settings, service = start_endpoint(
        tmp_path_factory.mktemp("sessions"), 'size = 1\nmemory = "1g"'
    )
    yield running, token, settings, service
    running.stop()
    service.sessions.close()
    close_shared()


@pytest.fixture(scope="module")
def glue(endpoint):
    running, token, _settings, _service = endpoint
    return glue_client(running.url, token)


def ready_session(glue, session_id: str, **extra) -> dict:
    created = glue.create_session(
        Id=session_id, Role=ROLE, Command={"Name": "glueetl", "PythonVersion": "3"}, **extra
    )["Session"]
    assert created["Status"] == "PROVISIONING"
    return wait_for(
        lambda: (s := glue.get_session(Id=session_id)["Session"])["Status"] != "PROVISIONING" and s,
        300,
        f"session {session_id} to leave PROVISIONING",
    )


def run(glue, session_id: str, code: str, seconds: float = 120) -> dict:
    number = glue.run_statement(SessionId=session_id, Code=code)["Id"]
    return wait_for(
        lambda: (
            (s := glue.get_statement(SessionId=session_id, Id=number)["Statement"])["State"] in ENDED and s
        ),
        seconds,
        f"statement {number}",
    )


@pytest.fixture(scope="module")
def session(glue):
    found = ready_session(
        glue,
        "notebook-1",
        DefaultArguments={"--enable-glue-datacatalog": "false", "--my_param": "abc"},
        IdleTimeout=60,
        Tags={"team": "etl"},
    )
    assert found["Status"] == "READY", found
    yield "notebook-1"
    with contextlib.suppress(ClientError):
        glue.delete_session(Id="notebook-1")


def test_a_statement_runs_spark_and_its_variables_stay_for_the_next(glue, session):
    first = run(glue, session, "df = spark.range(10)\ncount = df.count()\ncount")
    assert first["State"] == "AVAILABLE"
    assert first["Output"]["Status"] == "ok"
    assert first["Output"]["Data"]["TextPlain"].strip() == "10"
    assert first["Progress"] == 1.0
    assert first["StartedOn"] <= first["CompletedOn"]
    second = run(glue, session, "print(count * 2)\nsc.parallelize([1, 2, 3]).sum()")
    assert second["Output"]["Data"]["TextPlain"].split() == ["20", "6"]
    assert second["Id"] == first["Id"] + 1


def test_the_session_sees_its_arguments_and_glue_imports(glue, session):
    out = run(
        glue,
        session,
        "import sys\nfrom awsglue.utils import getResolvedOptions\n"
        "from awsglue.context import GlueContext\n"
        "args = getResolvedOptions(sys.argv, ['SESSION_ID', 'my_param'])\n"
        "glueContext = GlueContext(sc)\n"
        "print(args['SESSION_ID'], args['my_param'], glueContext.spark_session is not None)",
    )
    assert out["Output"]["Status"] == "ok", out["Output"]
    assert out["Output"]["Data"]["TextPlain"].split() == [session, "abc", "True"]


def test_boto3s_glue_client_in_a_session_reaches_this_endpoint_never_aws(glue, session, endpoint):
    """A Glue session reaches its own account's catalog with boto3; a sparkmark session's
    boto3 Glue client reaches the endpoint that runs it (dbt-glue's use_arrow path and
    notebook cells call it), signing as the server lets it, and never AWS."""
    running = endpoint[0]
    glue.create_database(DatabaseInput={"Name": "seen_from_a_session"})
    out = run(
        glue,
        session,
        "import os, boto3\nclient = boto3.client('glue')\n"
        "print(client.meta.endpoint_url == os.environ['AWS_ENDPOINT_URL_GLUE'])\n"
        "print(os.environ['AWS_ENDPOINT_URL_GLUE'])\n"
        "print(sorted(d['Name'] for d in client.get_databases()['DatabaseList']))",
    )
    assert out["Output"]["Status"] == "ok", out["Output"]
    same, url, names = out["Output"]["Data"]["TextPlain"].strip().splitlines()
    assert same == "True" and url == running.url
    assert "seen_from_a_session" in names


def test_a_failing_statement_is_available_with_the_error_and_its_traceback(glue, session):
    out = run(glue, session, "def f():\n    return 1 / 0\n\nprint('before')\nf()")
    assert out["State"] == "AVAILABLE"  # the statement ran; its output says it failed
    output = out["Output"]
    assert output["Status"] == "error"
    assert output["ErrorName"] == "ZeroDivisionError"
    assert output["ErrorValue"] == "division by zero"
    assert output["Traceback"][0].startswith("Traceback")
    assert any("line 2, in f" in line for line in output["Traceback"])
    assert not any("sparkmark" in line for line in output["Traceback"])  # the user's frames only
    assert output["Data"]["TextPlain"] == "before\n"
    syntax = run(glue, session, "def broken(:\n    pass")
    assert syntax["Output"]["Status"] == "error"
    assert syntax["Output"]["ErrorName"] == "SyntaxError"
    after = run(glue, session, "count")  # the session goes on
    assert after["Output"]["Data"]["TextPlain"].strip() == "10"


def test_a_spark_error_names_its_class_in_one_line(glue, session):
    out = run(glue, session, "spark.sql('select * from no_such_table').collect()")
    assert out["Output"]["Status"] == "error"
    assert "TABLE_OR_VIEW_NOT_FOUND" in out["Output"]["ErrorValue"]
    assert out["Output"]["ErrorName"] == "AnalysisException"


@pytest.mark.parametrize(
    "code",
    [
        "import time\nfor _ in range(600):\n    time.sleep(0.1)",  # Python that runs on
        "spark.range(0, 4 * 10**9, 1, 400).selectExpr('sum(id % 7)').collect()",  # a long Spark job
    ],
    ids=["python", "spark-job"],
)
def test_a_running_statement_is_cancelled_and_the_session_stays_usable(glue, session, code):
    number = glue.run_statement(SessionId=session, Code=code)["Id"]
    wait_for(
        lambda: glue.get_statement(SessionId=session, Id=number)["Statement"]["State"] == "RUNNING",
        60,
        "the statement to run",
    )
    glue.cancel_statement(SessionId=session, Id=number)
    began = time.monotonic()
    done = wait_for(
        lambda: (
            (s := glue.get_statement(SessionId=session, Id=number)["Statement"])["State"]
            in ("CANCELLED", "AVAILABLE")
            and s
        ),
        60,
        "the cancel",
    )
    assert done["State"] == "CANCELLED", done
    assert time.monotonic() - began < 30  # well before the statement would have ended
    assert run(glue, session, "count")["Output"]["Data"]["TextPlain"].strip() == "10"


def listening_addresses(port: int) -> list[str]:
    """The local addresses a TCP port listens on, as ``ss`` shows them."""
    import subprocess

    lines = subprocess.run(["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True)
    return [line.split()[3].rsplit(":", 1)[0] for line in lines.stdout.splitlines() if line.strip()]


def test_the_sessions_spark_ui_listens_on_loopback_and_cannot_kill(glue, session):
    """A session's Spark UI shows every statement's plans and the session's settings,
    and its kill links stop jobs on a plain POST that any page can send. It listens on
    loopback only, with kill off (Spark's spark.ui.killEnabled)."""
    import requests

    shown = run(glue, session, "print(spark.sparkContext.uiWebUrl)")["Output"]["Data"]["TextPlain"].strip()
    assert shown.startswith(("http://127.0.0.1:", "http://localhost:")), shown
    port = int(shown.rsplit(":", 1)[1])
    url = f"http://127.0.0.1:{port}"
    assert listening_addresses(port) and set(listening_addresses(port)) <= {"127.0.0.1", "[::ffff:127.0.0.1]"}
    app = requests.get(f"{url}/api/v1/applications", timeout=10).json()[0]["id"]
    code = "import time\nspark.sparkContext.parallelize(range(2), 2).map(lambda x: time.sleep(5) or x).sum()"
    number = glue.run_statement(SessionId=session, Code=code)["Id"]
    running = wait_for(
        lambda: requests.get(f"{url}/api/v1/applications/{app}/jobs?status=running", timeout=10).json(),
        60,
        "the statement's Spark job",
    )
    for job in running:
        requests.post(f"{url}/jobs/job/kill/", data={"id": str(job["jobId"])}, timeout=10)
    done = wait_for(
        lambda: (s := glue.get_statement(SessionId=session, Id=number)["Statement"])["State"] in ENDED and s,
        60,
        "the statement",
    )
    assert (done["State"], done["Output"]["Status"]) == ("AVAILABLE", "ok"), done
    assert done["Output"]["Data"]["TextPlain"].strip() == "1"


def test_a_huge_output_is_cut_the_statement_ends_and_the_session_then_idles_out(glue, endpoint):
    """A statement that prints 100 MB reaches AVAILABLE with its output cut to the
    documented size and a line that says so; so does one whose error is huge. The
    session is then idle, not busy, and its IdleTimeout counts from that statement's
    end. Its own secret-named arguments are masked in what it prints."""
    from datetime import timedelta

    service = endpoint[3]
    secret = "s3cr3t-of-the-session"
    ready_session(glue, "notebook-big", IdleTimeout=2, DefaultArguments={"--my_password": secret})
    printed = run(glue, "notebook-big", "print('x' * 100_000_000)", seconds=180)
    assert (printed["State"], printed["Output"]["Status"]) == ("AVAILABLE", "ok")
    text = printed["Output"]["Data"]["TextPlain"]
    assert text.startswith("x" * 1000) and len(text) < 1_100_000
    assert "output cut: 99000001 more characters not kept" in text
    failed = run(glue, "notebook-big", "raise ValueError('y' * 5_000_000)", seconds=180)
    assert (failed["State"], failed["Output"]["Status"]) == ("AVAILABLE", "error")
    assert len(failed["Output"]["ErrorValue"]) < 1_100_000 and "output cut" in failed["Output"]["ErrorValue"]
    argv = run(glue, "notebook-big", "import sys\nprint(sys.argv)")["Output"]["Data"]["TextPlain"]
    assert "--my_password" in argv and secret not in argv and "****" in argv
    ended = glue.get_session(Id="notebook-big")["Session"]
    assert ended["Status"] == "READY"
    service.sessions.check_timeouts(now=utcnow() + timedelta(minutes=1))
    assert glue.get_session(Id="notebook-big")["Session"]["Status"] == "READY"
    service.sessions.check_timeouts(now=utcnow() + timedelta(minutes=3))
    timed_out = glue.get_session(Id="notebook-big")["Session"]
    assert timed_out["Status"] == "TIMEOUT", timed_out
    glue.delete_session(Id="notebook-big")


def test_statements_are_listed_in_order_and_an_unknown_one_is_not_found(glue, session):
    listed = glue.list_statements(SessionId=session)["Statements"]
    numbers = [s["Id"] for s in listed]
    assert numbers == sorted(numbers) and numbers[0] == 0
    assert all(s["State"] in ENDED for s in listed)
    with pytest.raises(ClientError) as missing:
        glue.get_statement(SessionId=session, Id=10_000)
    assert missing.value.response["Error"]["Code"] == "EntityNotFoundException"


def test_sessions_are_listed_with_their_tags_and_fields(glue, session):
    listed = glue.list_sessions()
    assert session in listed["Ids"]
    mine = next(s for s in listed["Sessions"] if s["Id"] == session)
    assert mine["Status"] == "READY"
    assert mine["Role"] == ROLE
    assert mine["IdleTimeout"] == 60
    assert mine["DefaultArguments"]["--my_param"] == "abc"
    assert glue.list_sessions(Tags={"team": "etl"})["Ids"] == [session]
    assert glue.list_sessions(Tags={"team": "other"})["Ids"] == []
    arn = f"arn:aws:glue:us-east-1:123456789012:session/{session}"
    assert glue.get_tags(ResourceArn=arn)["Tags"] == {"team": "etl"}


def test_sessions_do_not_see_each_others_variables_and_stop_ends_one(glue, session):
    run(glue, session, "secret_of_the_first = 42")
    other = ready_session(glue, "notebook-2")
    assert other["Status"] == "READY"
    out = run(glue, "notebook-2", "secret_of_the_first")
    assert out["Output"]["Status"] == "error"
    assert out["Output"]["ErrorName"] == "NameError"
    pids = run(glue, "notebook-2", "import os\nos.getpid()")["Output"]["Data"]["TextPlain"]
    assert pids != run(glue, session, "import os\nos.getpid()")["Output"]["Data"]["TextPlain"]

    assert glue.stop_session(Id="notebook-2")["Id"] == "notebook-2"
    stopped = wait_for(
        lambda: (s := glue.get_session(Id="notebook-2")["Session"])["Status"] == "STOPPED" and s,
        60,
        "the session to stop",
    )
    assert "CompletedOn" in stopped
    with pytest.raises(ClientError) as refused:
        glue.run_statement(SessionId="notebook-2", Code="1")
    assert refused.value.response["Error"]["Code"] == "IllegalSessionStateException"
    assert glue.delete_session(Id="notebook-2")["Id"] == "notebook-2"
    with pytest.raises(ClientError) as gone:
        glue.get_session(Id="notebook-2")
    assert gone.value.response["Error"]["Code"] == "EntityNotFoundException"
    # the first session is untouched
    assert run(glue, session, "secret_of_the_first")["Output"]["Data"]["TextPlain"].strip() == "42"


def test_create_session_refuses_what_it_cannot_run(glue, session):
    with pytest.raises(ClientError) as duplicate:
        glue.create_session(Id=session, Role=ROLE, Command={"Name": "glueetl", "PythonVersion": "3"})
    assert duplicate.value.response["Error"]["Code"] == "AlreadyExistsException"
    with pytest.raises(ClientError) as shell:
        glue.create_session(Id="shell", Role=ROLE, Command={"Name": "pythonshell"})
    assert shell.value.response["Error"]["Code"] == "InvalidInputException"
    assert "glueetl" in shell.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as jars:
        glue.create_session(
            Id="jars",
            Role=ROLE,
            Command={"Name": "glueetl"},
            DefaultArguments={"--extra-jars": "s3://b/x.jar"},
        )
    assert jars.value.response["Error"]["Code"] == "InvalidInputException"
    assert "shell" not in glue.list_sessions()["Ids"]
    with pytest.raises(ClientError) as missing:
        glue.run_statement(SessionId="no-such-session", Code="1")
    assert missing.value.response["Error"]["Code"] == "EntityNotFoundException"


def test_a_session_is_not_created_or_run_without_the_token(endpoint, glue, session):
    running, _token, _settings, _service = endpoint
    stranger = boto3.client(
        "glue",
        endpoint_url=running.url,
        region_name="us-east-1",
        aws_access_key_id="notebook",
        aws_secret_access_key="not-the-token",
        config=Config(retries={"max_attempts": 1}),
    )
    with pytest.raises(ClientError) as refused:
        stranger.create_session(Id="intruder", Role=ROLE, Command={"Name": "glueetl"})
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] in (401, 403)
    with pytest.raises(ClientError):
        stranger.run_statement(SessionId=session, Code="import os; os.system('id')")
    assert "intruder" not in glue.list_sessions()["Ids"]
    assert [s["Code"] for s in glue.list_statements(SessionId=session)["Statements"]].count(
        "import os; os.system('id')"
    ) == 0


def test_the_console_shows_sessions_and_their_statements_and_stops_one(endpoint, glue, browser):
    from sparkmark.console.server import start

    from .conftest import goto

    _running, _token, settings, _service = endpoint
    ready_session(glue, "console-seen", IdleTimeout=45)
    run(glue, "console-seen", "rows = spark.range(12).count()\nprint('rows:', rows)")
    failed = run(glue, "console-seen", "undefined_name")
    assert failed["Output"]["Status"] == "error"
    console = start(settings, "127.0.0.1", 0, None, scheduler=False)
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    try:
        goto(page, console, "/sessions")
        row = page.locator('tr[data-session="console-seen"]')
        assert row.locator(".state").first.inner_text() == "READY"
        assert row.locator("td").nth(4).inner_text() == "2"  # its statements
        assert row.locator("td").nth(5).inner_text() == "45 min"
        row.locator("a", has_text="console-seen").click()
        page.wait_for_url("**/sessions/console-seen")
        first = page.locator('tr[data-statement="0"]')
        assert "spark.range(12)" in first.locator("pre.code").inner_text()
        assert "rows: 12" in first.inner_text()
        second = page.locator('tr[data-statement="1"]')
        assert "NameError" in second.locator("pre.error").inner_text()
        page.locator("#stop-session button").click()
        page.wait_for_url("**/sessions/console-seen")
        stopped = wait_for(
            lambda: glue.get_session(Id="console-seen")["Session"]["Status"] == "STOPPED", 60, "the stop"
        )
        assert stopped
        page.reload()
        assert page.locator("h1 .state").inner_text() == "STOPPED"
        assert page.locator("#stop-session").count() == 0
    finally:
        context.close()
        console.stop()


def warm_children() -> list[int]:
    """This process's warm Spark processes still alive (the pool starts them as children)."""
    import re
    from pathlib import Path

    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            ppid = int(re.search(r"\) \S (\d+)", (entry / "stat").read_text()).group(1))
        except (OSError, AttributeError):
            continue
        if "sparkmark.pool.worker" in cmdline and ppid == os.getpid():
            found.append(int(entry.name))
    return found


def test_sessions_past_the_limit_are_refused_and_a_deleted_provisioning_one_stops_its_process(
    tmp_path, spark
):
    """Glue answers CreateSession past its quota with ResourceNumberLimitExceededException;
    here the quota is ``[pool] max_sessions``. A session deleted while it is still
    PROVISIONING has its process stopped before its Spark is up (20 creates once left 20
    JVMs starting for minutes after their DeleteSession)."""
    from pathlib import Path

    running, token, settings, service = start_endpoint(tmp_path, 'size = 0\nmemory = "1g"\nmax_sessions = 2')
    home = settings.home
    before = set(warm_children())
    try:
        client = glue_client(running.url, token)
        command = {"Name": "glueetl", "PythonVersion": "3"}
        for name in ("limited-1", "limited-2"):
            assert (
                client.create_session(Id=name, Role=ROLE, Command=command)["Session"]["Status"]
                == "PROVISIONING"
            )
        with pytest.raises(ClientError) as refused:
            client.create_session(Id="limited-3", Role=ROLE, Command=command)
        assert refused.value.response["Error"]["Code"] == "ResourceNumberLimitExceededException"
        assert "max_sessions = 2" in refused.value.response["Error"]["Message"]
        wait_for(lambda: len(set(warm_children()) - before) >= 2, 30, "the sessions' processes to start")
        client.delete_session(Id="limited-1")
        client.stop_session(Id="limited-2")
        wait_for(lambda: not set(warm_children()) - before, 60, "the provisioning processes to stop")
        stopped = {p: p.read_text(errors="replace") for p in Path(home / "logs" / "pool").glob("*.log")}
        assert len(stopped) == 2 and not any("warm Spark up" in text for text in stopped.values())
        assert glue_status(client, "limited-2") == "STOPPED"
        # Ended sessions no longer count against the limit; a session let come up logs
        # "warm Spark up" in its process's log, which the two stopped ones never did.
        client.create_session(Id="limited-4", Role=ROLE, Command=command)
        assert ready_session_status(client, "limited-4") == "READY"
        started = [p for p in Path(home / "logs" / "pool").glob("*.log") if p not in stopped]
        assert len(started) == 1 and "warm Spark up" in started[0].read_text(errors="replace")
        client.delete_session(Id="limited-4")
    finally:
        running.stop()
        service.sessions.close()
        service.pool.close()


def glue_status(client, session_id: str) -> str:
    return client.get_session(Id=session_id)["Session"]["Status"]


def ready_session_status(client, session_id: str) -> str:
    return wait_for(
        lambda: (status := glue_status(client, session_id)) != "PROVISIONING" and status,
        300,
        f"session {session_id} to leave PROVISIONING",
    )
