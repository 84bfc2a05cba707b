"""The web console's HTTP layer, over real requests to a real server on 127.0.0.1:
each page from a real state store, paging, the reset/rewind confirmation and its CSRF
check, the token, bad input in URLs, and no secret on any page."""

from __future__ import annotations

import html
import http.client
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from sparkmark.console.server import check_binding, start
from sparkmark.engine.models import VersionKind
from sparkmark.errors import ConfigError

from .console_project import JOB, SECRET, build

SPARKMARK = Path(sys.executable).with_name("sparkmark")
HTML = {"Accept": "text/html"}


@pytest.fixture(scope="module")
def project(tmp_path_factory, spark):
    return build(tmp_path_factory.mktemp("console"), spark)


@pytest.fixture(scope="module")
def console(project):
    running = start(project.settings, "127.0.0.1", 0, None, scheduler=False)
    yield running
    running.stop()


def signed_in(console) -> requests.Session:
    """A client carrying the console's token, as a script would (Authorization: Bearer)."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {console.token}"
    return session


def get(console, path: str, **kwargs) -> requests.Response:
    response = signed_in(console).get(console.url + path, timeout=30, **kwargs)
    assert "Traceback" not in response.text
    return response


def rows(html: str, table_id: str) -> list[str]:
    body = html.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr[^>]*data-[a-z]+=\"[^\"]*\"[^>]*>.*?</tr>", body, flags=re.S)


def text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_jobs_page_lists_run_and_declared_jobs(console, project):
    page = get(console, "/")
    assert page.status_code == 200
    table = {re.search(r'data-job="([^"]+)"', r).group(1): text(r) for r in rows(page.text, "jobs")}
    assert {JOB, "load", "publish", "slow"} <= set(table)
    assert "FAILED" in table[JOB] and " 3 " in table[JOB]  # the last run failed; three runs
    # hourly_publish (cron(0 * * * ? *), started on creation) fires on the hour.
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:00:00 UTC \(hourly_publish\)", table["publish"])
    assert "NOT RUN" in table["load"] and "declared" in table["load"]


def test_job_page_shows_runs_with_masked_arguments_and_short_errors(console, project):
    page = get(console, f"/jobs/{JOB}")
    assert page.status_code == 200
    shown = rows(page.text, "runs")
    assert [re.search(r'data-run="([^"]+)"', r).group(1) for r in shown] == list(reversed(project.run_ids))
    failed = text(shown[0])
    assert "FAILED" in failed and "the warehouse refused the load" in failed
    assert "END-OF-ERROR" not in failed  # the list shows the error's start; the run page all of it
    assert "END-OF-ERROR" in get(console, f"/runs/{project.run_ids[-1]}").text
    assert "orders_src: 1 files" in text(shown[1]) and "orders_src: 2 files" in text(shown[2])
    assert "--db_password ****" in text(page.text)
    assert SECRET not in page.text


def test_run_page_has_metrics_manifest_outputs(console, project):
    first = project.run_ids[0]
    page = get(console, f"/runs/{first}")
    assert page.status_code == 200
    body = text(page.text)
    assert "SUCCEEDED" in body
    # Each metric a row with its unit, not key=value.
    figures = dict(
        re.findall(r'<tr data-metric="(\w+)"><th>[^<]+</th><td class="num">([^<]+)</td>', page.text)
    )
    assert figures["files_read"] == "2 files" and figures["files_listed"] == "2 files"
    assert figures["bytes_read"].endswith(" bytes") and "files_read=" not in body
    manifest = page.text.split("<h2>Files read</h2>", 1)[1].split("<h2>Outputs", 1)[0]
    listed = re.findall(r"<li>([^<]+)</li>", manifest)
    assert sorted(Path(p).name for p in listed) == ["a.json", "b.json"]
    assert all("dt=2026-11-01" in p for p in listed)
    outputs = page.text.split('id="outputs"', 1)[1].split("</table>", 1)[0]
    assert "orders_out" in outputs and "PUBLISHED" in outputs
    # Run through the Job API in this test process, it kept no log file.
    assert "This run kept no log" in body
    assert SECRET not in page.text


def test_bookmark_page_history_changes_and_file_search(console, project):
    page = get(console, f"/jobs/{JOB}/bookmark")
    assert page.status_code == 200
    history = rows(page.text, "history")
    assert [re.search(r'data-version="(\d+)"', r).group(1) for r in history] == ["2", "1"]
    assert "+1 files recorded, 3 in all" in text(history[0])  # c.json
    assert "+2 files recorded, 2 in all" in text(history[1])  # a.json, b.json
    files = page.text.split('id="files"', 1)[1].split("</table>", 1)[0]
    assert [Path(p).name for p in re.findall(r'<td class="small">([^<]+)</td>', files)] == [
        "a.json",
        "b.json",
        "c.json",
    ]
    found = get(console, f"/jobs/{JOB}/bookmark", params={"ctx": "orders_src", "q": "b.js"})
    files = found.text.split('id="files"', 1)[1].split("</table>", 1)[0]
    assert [Path(p).name for p in re.findall(r'<td class="small">([^<]+)</td>', files)] == ["b.json"]
    none = get(console, f"/jobs/{JOB}/bookmark", params={"ctx": "orders_src", "q": "zzz"})
    assert "No file whose path contains" in text(none.text)
    unknown = get(console, f"/jobs/{JOB}/bookmark", params={"ctx": "nope"})
    assert unknown.status_code == 404 and "no source 'nope'" in text(unknown.text)


def test_rewind_confirmation_previews_and_post_needs_csrf(console, project):
    first = project.run_ids[0]
    confirm = get(console, f"/jobs/{JOB}/bookmark/rewind", params={"run_id": first})
    assert confirm.status_code == 200
    row = text(rows(confirm.text, "preview")[0])
    # After a rewind to run 1, c.json (read by run 2) is due again; now nothing is.
    assert row.split()[:4] == ["orders_src", "files", "1", "0"]
    reset = get(console, f"/jobs/{JOB}/bookmark/rewind")
    assert text(rows(reset.text, "preview")[0]).split()[:4] == ["orders_src", "files", "3", "0"]

    before = project.store.latest_version(JOB).version
    url = console.url + f"/jobs/{JOB}/bookmark/rewind"
    # No CSRF token at all, a wrong one, and the right one from another origin: refused.
    session = signed_in(console)
    refused = session.post(url, data={"run_id": first}, allow_redirects=False, timeout=30)
    assert refused.status_code == 403
    session.get(console.url + f"/jobs/{JOB}/bookmark/rewind", params={"run_id": first}, timeout=30)
    token = session.cookies.get("sm_csrf")
    assert token and len(token) == 43
    wrong = session.post(url, data={"run_id": first, "csrf": "x" * 43}, allow_redirects=False, timeout=30)
    assert wrong.status_code == 403
    foreign = session.post(
        url,
        data={"run_id": first, "csrf": token},
        headers={"Origin": "http://evil.example"},
        allow_redirects=False,
        timeout=30,
    )
    assert foreign.status_code == 403
    assert project.store.latest_version(JOB).version == before

    done = session.post(url, data={"run_id": first, "csrf": token}, allow_redirects=False, timeout=30)
    assert done.status_code == 303 and done.headers["location"] == f"/jobs/{JOB}/bookmark"
    latest = project.store.latest_version(JOB)
    assert (latest.version, latest.kind, latest.rewound_to) == (before + 1, VersionKind.REWIND, 1)
    # Put the bookmark back where the other tests expect it.
    session.post(url, data={"run_id": project.run_ids[1], "csrf": token}, allow_redirects=False, timeout=30)
    assert project.store.latest_version(JOB).rewound_to == 2


def test_quality_pages(console, project):
    overview = get(console, "/quality")
    assert JOB in overview.text and "orders_checks" in overview.text
    page = get(console, f"/quality/{JOB}")
    assert page.status_code == 200
    scores = re.search(r'data-scores="([^"]+)"', page.text).group(1)
    assert scores.replace("&#34;", '"') == "[0.5, 1.0]"  # run 1 fails one rule of two; run 2 none
    result_ids = re.findall(rf"/quality/{JOB}/results/(\d+)", page.text)
    oldest = get(console, f"/quality/{JOB}/results/{min(map(int, result_ids))}")
    failed = [r for r in rows(oldest.text, "rules") if 'data-outcome="Failed"' in r]
    assert len(failed) == 1 and 'ColumnValues "qty" > 0' in text(failed[0])
    # The observed values that made it fail: qty > 0 held for 2 of the 3 rows.
    assert "Column.qty.ColumnValues.Compliance = 0.666666666667" in text(failed[0])
    assert get(console, f"/quality/{JOB}/results/999999").status_code == 404
    assert get(console, f"/quality/{JOB}/results/abc").status_code == 400
    assert get(console, "/quality/no_such_job").status_code == 404


def test_catalog_pages_and_schema_diff(console, project):
    overview = get(console, "/catalog")
    assert "/catalog/sales/orders" in overview.text
    page = get(console, "/catalog/sales/orders", params={"from": "1", "to": "2"})
    assert page.status_code == 200
    assert re.findall(r"<tr><td>([a-z]+)</td><td><code>", page.text) == ["id", "qty", "dt"]
    assert len(re.findall(r"<tr><td>2026-11-0\d</td>", page.text)) == 2
    diff = page.text.split('id="diff"', 1)[1].split("</ul>", 1)[0]
    assert "qty" in diff
    assert get(console, "/catalog/sales/nope").status_code == 404
    assert get(console, "/catalog/sales/orders", params={"from": "1", "to": "9"}).status_code == 404


def test_crawler_pages(console, project):
    overview = get(console, "/crawlers")
    assert "/crawlers/sales_lake" in overview.text and "SUCCEEDED" in overview.text
    page = get(console, "/crawlers/sales_lake")
    crawl = text(page.text.split('id="crawls"', 1)[1].split("</tbody>", 1)[0])
    assert "cr_0001" in crawl and "broken.json: not JSON at line 1" in crawl
    # Counted as Glue's console counts a crawl, not as key=value.
    assert re.search(r"<th>Partitions added</th><td class=\"num\">2</td>", page.text)
    assert "partitions_added=" not in crawl
    assert "sales" in text(page.text)
    assert get(console, "/crawlers/nope").status_code == 404


def test_workflow_definition_graph(console, project):
    page = get(console, "/workflows/nightly")
    assert page.status_code == 200
    nodes = dict(
        re.findall(
            r'class="node" data-id="([^"]+)" data-kind="[A-Z]+" data-name="[^"]+" data-state="([^"]+)"',
            page.text,
        )
    )
    assert nodes == {
        "trigger:nightly_start": "NOT FIRED",
        "job:load": "NOT RUN",
        "trigger:after_load": "NOT FIRED",
        "job:publish": "NOT RUN",
    }
    edges = set(re.findall(r'data-source="([^"]+)" data-target="([^"]+)"', page.text))
    assert edges == {
        ("trigger:nightly_start", "job:load"),
        ("job:load", "trigger:after_load"),
        ("trigger:after_load", "job:publish"),
    }
    assert get(console, "/workflows/nope").status_code == 404
    assert get(console, "/workflows/nightly/runs/wr_nope").status_code == 404


@pytest.mark.parametrize(
    "path,status,message",
    [
        ("/jobs/no_such_job", 404, "no job named 'no_such_job'"),
        ("/runs/jr_123", 400, "invalid run id 'jr_123'"),
        ("/runs/jr_" + "0" * 64, 404, "no run jr_000"),
        (f"/jobs/{JOB}?page=0", 400, "page must be a whole number from 1"),
        (f"/jobs/{JOB}?page=abc", 400, "page must be a whole number from 1"),
        (f"/jobs/{JOB}?page=99", 404, "page 99 is past the last (1)"),
        (f"/jobs/{JOB}/bookmark/rewind?run_id=../../etc", 400, "invalid run id"),
        ("/jobs/%2E%2E/bookmark", 400, "invalid job name '..'"),
        ("/static/..%2F..%2Fsettings.py", 404, "no such page"),
        ("/no/such/page", 404, "no such page"),
        ("/?state=BOGUS", 400, "state 'BOGUS' is not one of"),
        (f"/jobs/{JOB}?last=2w", 400, "last '2w' is not one of"),
        (f"/jobs/{JOB}?since=yesterday", 400, "since 'yesterday' is not a date"),
        ("/timeline?since=2026-11-02&until=2026-11-01", 400, "since must be before until"),
        ("/?type=glueray", 400, "type 'glueray' is not one of"),
        ("/jobs/no_such_job/script", 404, "no job named 'no_such_job'"),
    ],
)
def test_bad_input_in_urls_is_a_page_not_a_traceback(console, path, status, message):
    # http.client sends the path exactly as written (no client-side normalising).
    where = urlsplit(console.url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    conn.request("GET", path, headers={**HTML, "Authorization": f"Bearer {console.token}"})
    answer = conn.getresponse()
    body = answer.read().decode()
    conn.close()
    assert answer.status == status
    assert message in text(body)
    assert "Traceback" not in body and 'File "' not in body


def test_run_job_and_retry_need_the_token_and_csrf_and_a_declared_job(console, project):
    """Starting a run is running code: without the token, without the form's CSRF token
    or from another origin nothing is queued; an undeclared job cannot be started."""
    queued = lambda: len(console.service.workflows.actions_of(kind="JOB", name="load"))  # noqa: E731
    before = queued()
    url = console.url + "/jobs/load/run"
    anonymous = requests.post(url, data={"arguments": ""}, allow_redirects=False, timeout=30)
    assert anonymous.status_code == 401
    session = signed_in(console)
    assert session.post(url, data={"arguments": ""}, allow_redirects=False, timeout=30).status_code == 403
    session.get(console.url + "/jobs/load", timeout=30)
    token = session.cookies.get("sm_csrf")
    foreign = session.post(
        url, data={"arguments": "", "csrf": token}, headers={"Origin": "http://evil.example"},
        allow_redirects=False, timeout=30,
    )  # fmt: skip
    assert foreign.status_code == 403
    bad = session.post(url, data={"arguments": "day 1", "csrf": token}, allow_redirects=False, timeout=30)
    assert bad.status_code == 400 and "is not --name value" in text(bad.text)
    assert queued() == before

    # The job of the console project's runs is known only from its runs: not startable.
    undeclared = session.post(
        console.url + f"/jobs/{JOB}/run",
        data={"arguments": "", "csrf": token},
        allow_redirects=False,
        timeout=30,
    )
    assert undeclared.status_code == 409 and "is not declared" in text(undeclared.text)
    failed = project.run_ids[-1]
    retry = session.post(
        console.url + f"/runs/{failed}/retry", data={"csrf": token}, allow_redirects=False, timeout=30
    )
    assert retry.status_code == 409
    ok = session.post(
        console.url + f"/runs/{project.run_ids[0]}/retry",
        data={"csrf": token},
        allow_redirects=False,
        timeout=30,
    )
    assert ok.status_code == 409 and "only a failed" in text(ok.text)  # it succeeded

    started = session.post(
        url, data={"arguments": "--day 2026-11-27", "csrf": token}, allow_redirects=False, timeout=30
    )
    assert started.status_code == 303
    run_id = started.headers["location"].rsplit("/", 1)[1]
    action = console.service.workflows.action(run_id)
    assert action.name == "load" and action.arguments["--day"] == "2026-11-27"
    assert action.arguments["--JOB_NAME"] == "load"
    # Until the scheduler starts it (this console runs none), its page says STARTING.
    waiting = get(console, f"/runs/{run_id}")
    assert waiting.status_code == 200 and "STARTING" in text(waiting.text)
    listed = get(console, "/jobs/load")
    row = next(r for r in rows(listed.text, "runs") if f'data-run="{run_id}"' in r)
    assert "STARTING" in text(row) and "--day 2026-11-27" in text(row)
    assert 'hx-trigger="every 2s"' in listed.text  # the list follows it until it starts


def test_post_only_routes_refuse_get_and_unknown_methods(console):
    assert get(console, "/workflows/nightly/start").status_code == 405
    assert get(console, "/quality-annotations").status_code == 405


def test_an_annotation_without_the_forms_csrf_token_changes_nothing(console, project):
    """Excluding a data quality statistic is a form post: signed in but without the
    page's CSRF token it is refused, and no annotation is kept."""
    from sparkmark.quality.store import QualityStore

    store = QualityStore(project.store)
    result = store.results(JOB, limit=1)[0]
    metric = next(iter(result.metrics))
    answer = signed_in(console).post(
        console.url + "/quality-annotations",
        data={"result": str(result.id), "metric": metric, "inclusion": "EXCLUDE", "back": "/quality"},
        timeout=30,
        allow_redirects=False,
    )
    assert answer.status_code == 403 and "CSRF" in answer.text
    assert store.annotations_of([result.id]) == {}
    assert signed_in(console).delete(console.url + f"/jobs/{JOB}/bookmark", timeout=30).status_code == 405


def test_token_is_required_on_every_request(project):
    token = "console-token-7f3a9"
    running = start(project.settings, "127.0.0.1", 0, token, scheduler=False)
    try:
        url = running.url
        assert requests.get(url + "/", timeout=30, allow_redirects=False).status_code == 401
        redirect = requests.get(url + "/", headers=HTML, timeout=30, allow_redirects=False)
        assert (redirect.status_code, redirect.headers["location"]) == (303, "/login?next=%2F")
        assert requests.get(url + f"/runs/{project.run_ids[0]}", timeout=30).status_code == 401
        bearer = {"Authorization": f"Bearer {token}"}
        assert requests.get(url + "/", headers=bearer, timeout=30).status_code == 200
        wrong = {"Authorization": "Bearer nope"}
        assert requests.get(url + "/", headers=wrong, timeout=30).status_code == 401

        browser = requests.Session()
        page = browser.get(url + "/login", timeout=30)
        assert page.status_code == 200
        # The page says where the token is, with the options that exist, and never the token.
        assert "<code>--token</code>" not in page.text and token not in page.text
        assert "<code>--token-file</code>" in page.text and "<code>$SPARKMARK_HOME/token</code>" in page.text
        csrf = browser.cookies.get("sm_csrf")
        bad = browser.post(
            url + "/login", data={"token": "guess", "csrf": csrf}, timeout=30, allow_redirects=False
        )
        assert bad.status_code == 401 and "sm_session" not in browser.cookies
        no_csrf = requests.post(url + "/login", data={"token": token}, timeout=30, allow_redirects=False)
        assert no_csrf.status_code == 403
        good = browser.post(
            url + "/login", data={"token": token, "csrf": csrf}, timeout=30, allow_redirects=False
        )
        assert good.status_code == 303
        session = browser.cookies.get("sm_session")
        assert session and token not in session  # the cookie is an HMAC, not the token
        assert "HttpOnly" in good.headers["set-cookie"] and "SameSite=strict" in good.headers["set-cookie"]
        assert browser.get(url + "/", timeout=30).status_code == 200
        for page in ("/", f"/jobs/{JOB}", "/login"):
            assert token not in browser.get(url + page, timeout=30).text
    finally:
        running.stop()


def test_binding_beyond_loopback_needs_a_long_token(project):
    check_binding("127.0.0.1", "short")
    check_binding("0.0.0.0", "t" * 32)
    with pytest.raises(ConfigError, match="SPARKMARK_CONSOLE_TOKEN.*at least 32"):
        check_binding("0.0.0.0", "t" * 31)
    env = {"SPARKMARK_HOME": str(project.home), "PATH": "/usr/bin:/bin", "SPARKMARK_CONSOLE_TOKEN": "short"}
    done = subprocess.run(
        [str(SPARKMARK), "console", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error:") and done.stderr.strip().count("\n") == 0
    assert "SPARKMARK_CONSOLE_TOKEN" in done.stderr


def test_no_page_renders_a_secret(console, project):
    pages = ["/", f"/jobs/{JOB}", f"/jobs/{JOB}/bookmark", f"/jobs/{JOB}/bookmark/rewind"]
    pages += [f"/runs/{r}" for r in project.run_ids] + [f"/runs/{r}/live" for r in project.run_ids]
    pages += [f"/runs/{r}/log" for r in project.run_ids]
    pages += [
        "/timeline",
        "/timeline?last=30d",
        f"/jobs/{JOB}/script",
        f"/jobs/{JOB}?state=FAILED",
        "/?q=orders",
    ]
    for path in pages:
        page = get(console, path)
        assert page.status_code == 200, path
        assert SECRET not in page.text, path


def test_a_connections_password_a_job_printed_is_masked_in_its_log(console, project):
    """A job that prints a connection's password writes it to its log in clear; the
    console's log page masks it, as it masks every other secret."""
    from sparkmark.connections.records import ConnectionStore, StoredConnection
    from sparkmark.engine.run_logs import log_path
    from sparkmark.engine.sealing import Sealer

    password = "pw-console-printed-5150"
    sealed = Sealer.from_settings(project.settings).seal({"password": password})
    ConnectionStore(project.store).put(
        StoredConnection("printed", "JDBC", "jdbc:postgresql://db/x", "u", sealed), create=True
    )
    run_id = project.run_ids[0]
    stdout = log_path(project.settings.home, "JOB", JOB, run_id)
    stdout.parent.mkdir(parents=True, exist_ok=True)
    stdout.write_text(f"connecting with {password}\n")
    try:
        page = get(console, f"/runs/{run_id}/log")
        assert page.status_code == 200
        assert "connecting with ****" in text(page.text) and password not in page.text
    finally:
        stdout.unlink()
        ConnectionStore(project.store).delete("printed")


def test_a_running_run_polls_for_updates_and_a_finished_one_does_not(console, project, spark):
    from sparkmark import Job

    argv = ["job.py", "--JOB_NAME", "live_job", "--job-bookmark-option", "job-bookmark-enable"]
    job = Job.from_args(argv, spark=spark, store=project.store, settings=project.settings)
    live = get(console, f"/runs/{job.run_id}/live")
    assert 'data-state="RUNNING"' in live.text
    assert f'hx-get="/runs/{job.run_id}/live" hx-trigger="every 2s"' in live.text
    listing = get(console, "/jobs/live_job")
    assert 'hx-trigger="every 2s"' in listing.text  # the runs table refreshes too
    job.commit()
    done = get(console, f"/runs/{job.run_id}/live")
    assert 'data-state="SUCCEEDED"' in done.text and "hx-trigger" not in done.text
    assert "hx-trigger" not in get(console, "/jobs/live_job").text


def test_the_console_command_serves_until_interrupted(project):
    import os
    import signal

    env = {**os.environ, "SPARKMARK_HOME": str(project.home), "PYTHONUNBUFFERED": "1"}
    env["SPARKMARK_CONFIG"] = str(project.home / "sparkmark.toml")
    env.pop("SPARKMARK_CONSOLE_TOKEN", None)
    token_file = project.home / "console.token"
    token_file.write_text("from-a-file-91\n", encoding="utf-8")
    proc = subprocess.Popen(
        [str(SPARKMARK), "console", "--port", "0", "--no-scheduler", "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", line).group(0)
        assert "from-a-file-91" not in line
        assert requests.get(url + "/", timeout=30).status_code == 401
        authorised = requests.get(url + "/", headers={"Authorization": "Bearer from-a-file-91"}, timeout=30)
        assert authorised.status_code == 200 and JOB in authorised.text
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
