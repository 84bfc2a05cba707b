"""The servers as an attacker meets them: ``sparkmark api`` and ``sparkmark console`` in
their default set-up (loopback, nothing configured), as processes, over real HTTP.

What must hold: nothing that runs code or changes state is reached without the token;
a foreign ``Host`` or ``Origin`` (a DNS-rebinding page) is refused before anything
else; a body is refused by its size before it is read, and a slow one is cut off; JSON
nested too deep is a 400; wrong tokens are rate-limited; TLS works with ``Secure``
cookies; and a boto3 user reaches the endpoint through one profile sparkmark writes.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from sparkmark.access import FailureLimiter, HostPolicy, json_depth_ok, local_token

SPARKMARK = [sys.executable, "-m", "sparkmark"]
REBOUND = "rebound.example"  # a page's own name, pointed at 127.0.0.1 by its DNS


@pytest.fixture
def project(tmp_path, monkeypatch):
    config = tmp_path / "project" / "sparkmark.toml"
    config.parent.mkdir()
    config.write_text("")
    monkeypatch.setenv("SPARKMARK_CONFIG", str(config))
    return tmp_path


def serve(kind: str, *extra: str, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """``sparkmark api`` or ``sparkmark console`` as a process; returns it and its URL."""
    proc = subprocess.Popen(
        [*SPARKMARK, kind, "--port", "0", "--no-scheduler", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"https?://127\.0\.0\.1:\d+", line)
    assert found, line + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
    return proc, found.group(0)


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    _out, err = proc.communicate(timeout=30)
    return err


def raw(url: str, method: str, path: str, body: bytes = b"", headers: dict | None = None):
    """One request with exactly these headers (Host included): status, headers, body."""
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    sent = {"Host": where.netloc, **(headers or {})}
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in sent.items():
        conn.putheader(name, value)
    if "Content-Length" not in sent and (body or method in ("POST", "PUT")):
        conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    answer = conn.getresponse()
    data = answer.read()
    conn.close()
    return answer.status, dict(answer.getheaders()), data


def glue_request(
    url: str, operation: str, params: dict, *, secret: str | None, host: str | None = None, **headers
):
    """A Glue API call as bytes on the wire: signed with ``secret`` (None: unsigned),
    for the Host given (a rebound page's name, or the endpoint's own)."""
    where = urlsplit(url)
    body = json.dumps(params).encode()
    sent = {
        "X-Amz-Target": f"AWSGlue.{operation}",
        "Content-Type": "application/x-amz-json-1.1",
        "Host": f"{host}:{where.port}" if host else where.netloc,
        **headers,
    }
    if secret is not None:
        request = AWSRequest(method="POST", url=f"http://{sent['Host']}/", data=body, headers=sent)
        SigV4Auth(Credentials("any", secret), "glue", "us-east-1").add_auth(request)
        sent = dict(request.headers.items())
    status, _headers, data = raw(url, "POST", "/", body, sent)
    return status, json.loads(data) if data else {}


def glue_client(url: str, secret: str, **config):
    return boto3.client(
        "glue",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="any",
        aws_secret_access_key=secret,
        config=Config(retries={"max_attempts": 1}, **config),
    )


# ------------------------------------------------------------------ the Glue API endpoint


def test_the_endpoint_runs_nothing_for_a_rebound_page_or_an_unsigned_request(
    project, sparkmark_home, tmp_path
):
    """The probe that found the hole: CreateJob with a script, then StartJobRun, from a
    page whose name was rebound to 127.0.0.1, and from a local process without the token."""
    marker = tmp_path / "ran"
    script = tmp_path / "payload.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('owned')\n")
    job = {"Name": "payload", "Role": "r", "Command": {"Name": "glueetl", "ScriptLocation": str(script)}}
    proc, url = serve("api")
    try:
        token = local_token(sparkmark_home)
        assert oct((sparkmark_home / "token").stat().st_mode & 0o777) == "0o600"
        for attempt in (
            {"secret": None, "host": REBOUND, "Origin": f"http://{REBOUND}:8000"},  # the page, no token
            {"secret": token, "host": REBOUND},  # even signed, a foreign Host is not ours
            {"secret": token, "Origin": f"http://{REBOUND}"},  # our Host, a foreign page's Origin
            {"secret": token, "Origin": "null"},  # a sandboxed page
            {"secret": None},  # a local process without the token
            {"secret": "guessed-token"},
        ):
            status, answer = glue_request(url, "CreateJob", job, **attempt)
            assert (status, answer.get("__type")) == (403, "AccessDeniedException"), attempt
            status, answer = glue_request(url, "StartJobRun", {"JobName": "payload"}, **attempt)
            assert status == 403, attempt
        glue = glue_client(url, token)
        assert glue.get_jobs()["Jobs"] == []  # nothing was created
        # The same calls, signed with the token, from this machine, are served.
        status, _ = glue_request(url, "CreateJob", job, secret=token, host="localhost")
        assert status == 200
        assert [j["Name"] for j in glue.get_jobs()["Jobs"]] == ["payload"]
    finally:
        err = stop(proc)
    assert not marker.exists()
    assert local_token(sparkmark_home) not in err  # the token is never logged
    assert "Traceback" not in err


def test_the_endpoint_limits_bodies_before_reading_them(project, sparkmark_home):
    proc, url = serve(
        "api", env={"SPARKMARK_REQUEST_BODY_SECONDS": "1", "SPARKMARK_MAX_REQUEST_BYTES": "100000"}
    )
    try:
        where = urlsplit(url)
        # Announced as 400 MB, never sent: refused from the header alone (a server that
        # waited for the body would leave this request to time out).
        status, _headers, data = raw(url, "POST", "/", b"", {"Content-Length": str(400 * 1024 * 1024)})
        assert (status, json.loads(data)["__type"]) == (413, "RequestEntityTooLarge")
        # Chunked, with no length: cut off once past the cap.
        with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
            sock.sendall(
                f"POST / HTTP/1.1\r\nHost: {where.netloc}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
            )
            chunk = b"x" * 50_000
            for _ in range(3):
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            assert b" 413 " in sock.recv(4096).split(b"\r\n", 1)[0]
        # A body announced and then sent too slowly: 408 and the connection closed.
        with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
            sock.sendall(
                f"POST / HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Length: 1000\r\n\r\nab".encode()
            )
            first = sock.recv(4096)  # within the socket's 30 s, after the server's 1 s
            assert b" 408 " in first.split(b"\r\n", 1)[0]
            while sock.recv(4096):  # the server closes it
                pass
        # A client that goes away mid-body: one line in the log, no traceback.
        with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
            sock.sendall(
                f"POST / HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Length: 1000\r\n\r\nab".encode()
            )
        time.sleep(0.5)  # let the server notice the disconnect before it is stopped
        # JSON nested 5,000 deep, signed: a 400 SerializationException, not a 500.
        token = local_token(sparkmark_home)
        deep = "[" * 5000 + "]" * 5000
        body = json.dumps({"DatabaseInput": {"Name": "d", "Parameters": {}}})[:-1] + f', "x": {deep}}}'
        request = AWSRequest(
            method="POST",
            url=url + "/",
            data=body.encode(),
            headers={"X-Amz-Target": "AWSGlue.CreateDatabase", "Content-Type": "application/x-amz-json-1.1"},
        )
        SigV4Auth(Credentials("any", token), "glue", "us-east-1").add_auth(request)
        answer = requests.post(
            url + "/", data=body.encode(), headers=dict(request.headers.items()), timeout=30
        )
        assert (answer.status_code, answer.json()["__type"]) == (400, "SerializationException")
        assert glue_client(url, token).get_databases()["DatabaseList"] == []
    finally:
        err = stop(proc)
    assert "Traceback" not in err
    assert "went away before its request was read" in err
    assert err.count("\n") < 15, err


def test_wrong_signatures_are_rate_limited(project, sparkmark_home):
    proc, url = serve("api")
    try:
        statuses = [glue_request(url, "GetDatabases", {}, secret=f"guess-{i}")[0] for i in range(12)]
        assert statuses[:10] == [403] * 10 and statuses[10:] == [429, 429]
        # The guesser's wrong signatures stay refused; the right token is served from the
        # same address, since the signature is checked before the limiter is asked.
        assert glue_request(url, "GetDatabases", {}, secret="guess-12")[0] == 429
        assert glue_request(url, "GetDatabases", {}, secret=local_token(sparkmark_home))[0] == 200
    finally:
        stop(proc)


def test_requests_without_credentials_are_never_counted(project, sparkmark_home):
    """Any web page can make a browser send unsigned requests to a loopback port; they
    are refused and never count against anyone (issue: ten <img> tags locked every local
    client out for a minute)."""
    proc, url = serve("api")
    try:
        for _ in range(30):
            assert raw(url, "GET", "/metrics")[0] == 401
            assert glue_request(url, "GetDatabases", {}, secret=None)[0] == 403
        token = local_token(sparkmark_home)
        assert raw(url, "GET", "/metrics", headers={"Authorization": f"Bearer {token}"})[0] == 200
        assert glue_client(url, token).get_databases()["DatabaseList"] == []
        # A wrong bearer token is counted under what it presented, not the address.
        wrong = [raw(url, "GET", "/metrics", headers={"Authorization": "Bearer x"})[0] for _ in range(11)]
        assert wrong == [401] * 10 + [429]
        assert raw(url, "GET", "/metrics", headers={"Authorization": f"Bearer {token}"})[0] == 200
    finally:
        stop(proc)


def test_an_aws_profile_is_the_one_step_for_the_aws_cli(project, sparkmark_home, tmp_path):
    """`sparkmark aws-profile` writes a named profile (endpoint and token); the real AWS
    CLI then works with AWS_PROFILE alone, and other profiles are kept."""
    config, credentials = tmp_path / "aws" / "config", tmp_path / "aws" / "credentials"
    config.parent.mkdir()
    config.write_text("[profile work]\nregion = eu-west-1\n")
    credentials.write_text("[work]\naws_access_key_id = AKIAWORK\naws_secret_access_key = keep-me\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        "AWS_CONFIG_FILE": str(config),
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }
    proc, _url = serve("api")
    try:
        wrote = subprocess.run(
            [*SPARKMARK, "aws-profile"], capture_output=True, text=True, env=env, timeout=60
        )
        assert wrote.returncode == 0, wrote.stderr
        assert local_token(sparkmark_home) not in wrote.stdout + wrote.stderr
        assert oct(credentials.stat().st_mode & 0o777) == "0o600"
        assert "keep-me" in credentials.read_text() and "[profile work]" in config.read_text()
        done = subprocess.run(
            ["aws", "glue", "create-database", "--database-input", '{"Name": "from_cli"}'],
            capture_output=True,
            text=True,
            env={**env, "AWS_PROFILE": "sparkmark"},
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        listed = subprocess.run(
            ["aws", "glue", "get-databases", "--query", "DatabaseList[].Name", "--output", "text"],
            capture_output=True,
            text=True,
            env={**env, "AWS_PROFILE": "sparkmark"},
            timeout=120,
        )
        assert listed.stdout.split() == ["from_cli"], listed.stderr
        # The profile points the logs and STS calls Glue's tools make at the endpoint too.
        for command, expected in (
            (["aws", "sts", "get-caller-identity", "--query", "Account", "--output", "text"], "000000000000"),
            (["aws", "logs", "describe-log-groups", "--query", "logGroups[0].logGroupName", "--output", "text"],
             "/aws-glue/jobs/error"),
        ):  # fmt: skip
            answered = subprocess.run(
                command, capture_output=True, text=True, env={**env, "AWS_PROFILE": "sparkmark"}, timeout=120
            )
            assert answered.stdout.strip() == expected, answered.stderr
    finally:
        stop(proc)


# ------------------------------------------------------------------ the console


def test_the_console_runs_nothing_for_a_rebound_page_or_without_the_token(project, sparkmark_home):
    """The Studio path that ran code: GET /studio for a CSRF cookie, then PUT a job with
    a CustomCode node, then run it. None of it is reached without the token, and a
    foreign Host or Origin is refused even with it."""
    proc, url = serve("console")
    nodes = {
        "nodes": {"n1": {"CustomCode": {"Name": "C", "Inputs": [], "Code": "import os", "ClassName": "X"}}}
    }
    body = json.dumps(nodes).encode()
    try:
        token = local_token(sparkmark_home)
        status, headers, _ = raw(url, "GET", "/studio", headers={"Host": f"{REBOUND}:8080"})
        assert status == 403 and "set-cookie" not in {k.lower() for k in headers}
        for method, path in (
            ("PUT", "/studio/api/jobs/owned"),
            ("POST", "/studio/api/jobs/owned/run"),
            ("POST", "/studio/api/jobs/owned/preview"),
            ("POST", "/workflows/any/start"),
            ("POST", "/quality-annotations"),
        ):
            status, _, _ = raw(url, method, path, body, {"Content-Type": "application/json"})
            assert status == 401, (method, path)
            status, _, _ = raw(url, method, path, body, {"Host": REBOUND, "Authorization": f"Bearer {token}"})
            assert status == 403, (method, path)
        # With the token and a real CSRF cookie, a foreign page's Origin is still refused.
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        assert session.get(url + "/studio", timeout=30).status_code == 200
        csrf = session.cookies.get("sm_csrf")
        foreign = session.put(
            url + "/studio/api/jobs/owned",
            data=body,
            headers={"X-CSRF-Token": csrf, "Origin": f"http://{REBOUND}:{urlsplit(url).port}"},
            timeout=30,
        )
        assert foreign.status_code == 403
        assert session.get(url + "/studio/api/jobs/owned", timeout=30).json()["saved"] is False
        # The sign-in URL's way in: a wrong token is refused; the right one signs in.
        browser = requests.Session()
        assert browser.get(url + "/login?token=wrong", timeout=30, allow_redirects=False).status_code == 401
        signed = browser.get(url + f"/login?token={token}&next=/studio", timeout=30, allow_redirects=False)
        assert (signed.status_code, signed.headers["location"]) == (303, "/studio")
        assert "Secure" not in signed.headers["set-cookie"]  # plain HTTP: a Secure cookie would be dropped
        away = browser.get(
            url + f"/login?token={token}&next=//evil.example/", timeout=30, allow_redirects=False
        )
        assert away.headers["location"] == "/"  # never sent on to another site
        assert browser.get(url + "/studio", timeout=30).status_code == 200
    finally:
        err = stop(proc)
    assert token not in err and "Traceback" not in err


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = tmp_path / "cert.pem", tmp_path / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return certfile, keyfile


def test_tls_on_both_servers_with_secure_cookies(project, sparkmark_home, tmp_path):
    certfile, keyfile = self_signed(tmp_path)
    tls = ("--certfile", str(certfile), "--keyfile", str(keyfile))
    console, console_url = serve("console", *tls)
    api, api_url = serve("api", *tls)
    try:
        token = local_token(sparkmark_home)
        assert console_url.startswith("https://") and api_url.startswith("https://")
        here = console_url.replace("127.0.0.1", "localhost")  # the name the certificate holds
        signed = requests.get(
            here + f"/login?token={token}", verify=str(certfile), timeout=30, allow_redirects=False
        )
        assert signed.status_code == 303
        cookie = signed.headers["set-cookie"]
        assert "Secure" in cookie and "HttpOnly" in cookie
        verified = boto3.client(
            "glue",
            endpoint_url=api_url.replace("127.0.0.1", "localhost"),
            region_name="us-east-1",
            aws_access_key_id="any",
            aws_secret_access_key=token,
            verify=str(certfile),
        )
        assert verified.get_databases()["DatabaseList"] == []
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(console_url.replace("https://", "http://") + "/health", timeout=10)
    finally:
        stop(console)
        stop(api)


def test_tls_needs_both_files(project, sparkmark_home, tmp_path):
    done = subprocess.run(
        [*SPARKMARK, "console", "--port", "0", "--certfile", str(tmp_path / "cert.pem")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "SPARKMARK_TLS_KEYFILE" in done.stderr


# ------------------------------------------------------------------ the pure parts


def test_host_and_origin_names():
    local = HostPolicy("127.0.0.1")
    for host in ("localhost", "localhost:8080", "127.0.0.1:4599", "[::1]:80", "LOCALHOST"):
        assert local.host_ok(host), host
    for host in (None, "", "rebound.example", "rebound.example:8080", "127.0.0.1.nip.io", "localhost.evil"):
        assert not local.host_ok(host), host
    assert local.origin_ok(None) and local.origin_ok("http://localhost:3000")
    for origin in ("null", "http://rebound.example", "file://", "localhost", "ftp://localhost"):
        assert not local.origin_ok(origin), origin
    named = HostPolicy("0.0.0.0", ["etl.internal", " "])
    assert named.host_ok("etl.internal:8080") and named.origin_ok("https://etl.internal")
    assert not named.host_ok("0.0.0.0")
    assert HostPolicy("10.0.0.5").host_ok("10.0.0.5:8080")  # the address it binds
    assert HostPolicy("127.0.0.1", ["*"]).host_ok("anything")


def test_the_failure_limiter_forgets_after_its_window():
    now = [0.0]
    limiter = FailureLimiter(limit=3, window=60, clock=lambda: now[0])
    for _ in range(3):
        assert not limiter.blocked("a", "wrong")
        assert limiter.failed("a", "wrong") is False
    assert limiter.blocked("a", "wrong")
    assert limiter.failed("a", "wrong") is True
    # Keyed by address and by what was presented: nobody else is held back.
    assert not limiter.blocked("b", "wrong")
    assert not limiter.blocked("a", "the-right-token")
    now[0] = 61
    assert not limiter.blocked("a", "wrong")


def test_json_depth_is_found_without_recursion():
    assert json_depth_ok(b'{"a": [[1, 2], {"b": []}]}', limit=4)
    assert not json_depth_ok(b'{"a": [[1, 2], {"b": []}]}', limit=3)
    assert json_depth_ok(b'{"a": "[[[[[[[[\\"[[[["}', limit=1)  # brackets in strings do not count
    assert not json_depth_ok(b"[" * 100_000)
    assert json_depth_ok(b"")


GLUE_CALLER = """
import boto3
boto3.client("glue").create_database(DatabaseInput={"Name": "made_by_the_script"})
"""


def test_a_script_with_aws_credentials_of_its_own_reaches_the_endpoint(project, sparkmark_home, tmp_path):
    """A Glue script under `sparkmark run` whose environment holds AWS credentials (for
    S3, say) signs Glue calls with them; its own endpoint accepts that signature, and
    nothing else of the user's changes."""
    script = tmp_path / "caller.py"
    script.write_text(GLUE_CALLER)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        "AWS_ACCESS_KEY_ID": "AKIAOWN",
        "AWS_SECRET_ACCESS_KEY": "the-users-own-secret",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    done = subprocess.run(
        [*SPARKMARK, "run", str(script), "--JOB_NAME", "caller"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "the-users-own-secret" not in done.stdout + done.stderr
    proc, url = serve("api")
    try:
        names = [
            d["Name"] for d in glue_client(url, local_token(sparkmark_home)).get_databases()["DatabaseList"]
        ]
        assert names == ["made_by_the_script"]
        # That secret opens only the script's own endpoint, not the shared one.
        assert glue_request(url, "GetDatabases", {}, secret="the-users-own-secret")[0] == 403
    finally:
        stop(proc)


def test_a_web_page_cannot_lock_local_clients_out(project, sparkmark_home, browser, tmp_path):
    """Any site a user opens can aim ``<img>`` tags at loopback ports. A page in Chromium
    with a dozen images aimed at each server (the API's /metrics, the console's /metrics
    and its sign-in URL with a wrong token) leaves the signed boto3 call, the bearer
    /metrics and the right sign-in URL answering."""
    import http.server
    import threading

    api, api_url = serve("api")
    console, console_url = serve("console")
    token = local_token(sparkmark_home)
    tags = "".join(
        f'<img src="{api_url}/metrics?n={i}"><img src="{console_url}/metrics?n={i}">'
        f'<img src="{console_url}/login?token=guess&n={i}">'
        for i in range(12)
    )
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(f"<html><body>{tags}</body></html>")
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(site), **k)  # noqa: E731
    page_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=page_server.serve_forever, daemon=True).start()
    context = browser.new_context()
    try:
        tab = context.new_page()
        sent: list[str] = []
        ended: list[str] = []
        api_statuses: list[int] = []
        ours = (api_url, console_url)
        tab.on("request", lambda r: sent.append(r.url) if r.url.startswith(ours) else None)
        tab.on("requestfinished", lambda r: ended.append(r.url) if r.url.startswith(ours) else None)
        tab.on("requestfailed", lambda r: ended.append(r.url) if r.url.startswith(ours) else None)
        tab.on("response", lambda r: api_statuses.append(r.status) if r.url.startswith(api_url) else None)
        tab.goto(f"http://127.0.0.1:{page_server.server_address[1]}/index.html")
        tab.wait_for_function("Array.from(document.images).every(i => i.complete)", timeout=30_000)
        assert len(sent) == 36, sent  # every image was asked for
        wait_until = time.monotonic() + 30
        while len(ended) < 36 and time.monotonic() < wait_until:
            tab.wait_for_timeout(100)
        assert len(ended) == 36 and api_statuses == [401] * 12, (ended, api_statuses)
        # The page's wrong sign-ins reached the console and were counted, under what they
        # presented: that value is throttled now, and nothing else is.
        assert raw(console_url, "GET", "/login?token=guess")[0] == 429
        assert glue_client(api_url, token).get_databases()["DatabaseList"] == []
        bearer = {"Authorization": f"Bearer {token}"}
        assert raw(api_url, "GET", "/metrics", headers=bearer)[0] == 200
        assert raw(console_url, "GET", "/metrics", headers=bearer)[0] == 200
        status, headers, _ = raw(console_url, "GET", f"/login?token={token}")
        assert status == 303 and "sm_session=" in headers.get("set-cookie", "")
    finally:
        context.close()
        page_server.shutdown()
        stop(api)
        stop(console)


def test_bodies_in_flight_share_one_budget(project, sparkmark_home):
    """Each body under the per-request cap, many at once: the server holds at most
    SPARKMARK_MAX_INFLIGHT_BYTES of them together and answers the rest 503 at once,
    before reading them; a small signed call still goes through, and the budget comes
    back when the held requests end."""
    mib = 1024 * 1024
    proc, url = serve(
        "api",
        env={"SPARKMARK_MAX_REQUEST_BYTES": str(8 * mib), "SPARKMARK_MAX_INFLIGHT_BYTES": str(20 * mib)},
    )
    where = urlsplit(url)
    holders: list[socket.socket] = []

    def hold(refused: bool) -> tuple[socket.socket, bytes]:
        """A request declaring an 8 MiB body. One over the budget is answered after its
        head, before any of its body is read (the server then closes it, so sending the
        body could only meet a closed socket); one within it sends 1 MiB, then waits."""
        conn = socket.create_connection((where.hostname, where.port), timeout=30)
        conn.sendall(
            f"POST / HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Type: application/x-amz-json-1.1\r\n"
            f"X-Amz-Target: AWSGlue.GetDatabases\r\nContent-Length: {8 * mib}\r\n\r\n".encode()
        )
        if refused:
            conn.settimeout(15)
            return conn, conn.recv(200)
        conn.sendall(b" " * mib)
        conn.settimeout(0.5)
        try:
            return conn, conn.recv(200)
        except TimeoutError:
            return conn, b""

    try:
        heads: list[bytes] = []
        for i in range(6):
            conn, head = hold(refused=i >= 2)
            holders.append(conn)
            heads.append(head)
        assert [h[:12] for h in heads[:2]] == [b"", b""]  # two are being read: 16 of 20 MiB
        assert all(h.startswith(b"HTTP/1.1 503") for h in heads[2:]), heads
        assert glue_client(url, local_token(sparkmark_home)).get_databases()["DatabaseList"] == []
        for conn in holders:
            conn.close()

        # The budget is back once the held requests are gone: a whole 8 MiB body is read
        # (and, unsigned, refused by its signature, not by the budget).
        def whole_body_answer() -> int:
            return raw(url, "POST", "/", b" " * (8 * mib), {"X-Amz-Target": "AWSGlue.GetDatabases"})[0]

        deadline = time.monotonic() + 30
        status = whole_body_answer()
        while status == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
            status = whole_body_answer()
        assert status == 403
    finally:
        for conn in holders:
            conn.close()
        err = stop(proc)
    assert "other requests' bodies are held" in err
