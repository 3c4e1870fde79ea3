"""deploy/compose.tls.yaml on loopback, without Docker: docs/tls.md's `openssl` lines make a CA and the parts'
certificates, the compose file's commands start a TLS scheduler, a CPU worker and a web process with their Dask
settings (the secrets' paths made the test's files), and a run trains through them. The scheduler refuses a
client without a certificate and one whose certificate another CA signed; `feedback-lab serve` says so in one
sentence and exits with status 2. And deploy/compose.yaml publishes no Dask port.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import dask
import pytest
import yaml
from distributed import Client
from distributed.security import Security

from app.jobs.cluster import SchedulerUnreachable, check_tls_settings, refusal
from app.serving.room import TOKEN_VARIABLE
from bench.load_test import PageSession
from bench.servers import ROOT, free_port, start_server, stop_server, wait_until
from tests.app.test_deploy import RUN, SERVICES, TEACHER_TOKEN, command, finished_runs

pytestmark = pytest.mark.server  # every test here starts a process (an app server, nginx, or the Dask cluster the model jobs run on)

TLS = yaml.safe_load((ROOT / "deploy" / "compose.tls.yaml").read_text())
TLS_SERVICES = TLS["services"]
SECRETS = {name: Path(secret["file"]).name for name, secret in TLS["secrets"].items()}
"""Each Compose secret's file name in deploy/tls/ (dask-ca -> ca.pem)."""
LOOPBACK_ONLY = ["--host", "127.0.0.1", "--dashboard-address", "127.0.0.1:0"]
"""In a container the scheduler and worker listen on every interface of the compose network; here, on loopback."""
REFUSAL_SECONDS = 5
"""How long a refused client may take to learn it: the handshake fails at once, without Dask's retries."""


def openssl_lines() -> list[list[str]]:
    """The `openssl` commands of docs/tls.md's first shell block, as words."""
    block = (ROOT / "docs" / "tls.md").read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line) for line in block.splitlines() if line.startswith("openssl ")]


def make_certificates(folder: Path) -> Path:
    """docs/tls.md's CA, certificates and keys, in `folder`."""
    folder.mkdir()
    for words in openssl_lines():
        subprocess.run(words, cwd=folder, check=True, capture_output=True, timeout=60)
    return folder


def environment(service: str, certificates: Path) -> dict[str, str]:
    """A service's variables from both compose files, each secret's path (/run/secrets/NAME) made its file's in
    `certificates`."""
    files = {f"/run/secrets/{name}": str(certificates / file) for name, file in SECRETS.items()}
    return SERVICES[service]["environment"] | {k: files.get(v, v) for k, v in TLS_SERVICES[service]["environment"].items()}


def client_security(certificates: Path, ca: Path | None = None) -> Security:
    """A Dask client's TLS settings: the web processes' certificate and key from `certificates`, trusting `ca`
    (default: the CA of `certificates`)."""
    return Security(tls_ca_file=str(ca or certificates / "ca.pem"), tls_client_cert=str(certificates / "web.pem"),
                    tls_client_key=str(certificates / "web-key.pem"), require_encryption=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The TLS compose file's scheduler and CPU worker on loopback, a web process joined to them, one runs folder."""
    tmp = tmp_path_factory.mktemp("tls")
    certificates, other = make_certificates(tmp / "tls"), make_certificates(tmp / "other")
    runs = tmp / "runs"
    runs.mkdir()
    # The compose file asks its operator for the teacher's token (docker compose refuses to start without one).
    ours = {"FEEDBACK_LAB_RUNS": str(runs), "PYTHONPATH": str(ROOT), TOKEN_VARIABLE: TEACHER_TOKEN}
    port = free_port()
    scheduler = f"tls://127.0.0.1:{port}"
    started = []

    def spawn(service, words):
        env = os.environ | environment(service, certificates) | ours
        log = (tmp / f"{service}.log").open("w")
        started.append(subprocess.Popen(words + LOOPBACK_ONLY, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log))

    words = command("scheduler", scheduler, TLS_SERVICES)
    words[words.index("--port") + 1] = str(port)
    spawn("scheduler", words)
    spawn("cpu-worker", command("cpu-worker", scheduler, TLS_SERVICES))
    client = None
    try:
        deadline = time.monotonic() + 60
        while client is None:
            try:
                client = Client(scheduler, security=client_security(certificates), timeout=5, set_as_default=False)
            except OSError:
                assert time.monotonic() < deadline, "timed out waiting for the TLS scheduler"
                time.sleep(0.5)
        wait_until(lambda: len(client.scheduler_info()["workers"]) == 1, 60, "the worker to join the TLS scheduler")
        options = command("web-1", scheduler, TLS_SERVICES)
        options = options[options.index("serve") + 1:]
        options[options.index("--port"):options.index("--port") + 2] = []
        web_port = free_port()
        origin = {"FEEDBACK_LAB_WEBSOCKET_ORIGIN": f"localhost:{web_port}"}  # the compose file's is nginx's
        web = start_server(*options, env=environment("web-1", certificates) | ours | origin, port=web_port)
        yield type("TLSCluster", (), {"scheduler": scheduler, "port": port, "client": client, "web": web, "runs": runs,
                                      "certificates": certificates, "other": other, "tmp": tmp})
        stop_server(web)
    finally:
        if client is not None:
            client.close()
        for process in reversed(started):
            process.send_signal(signal.SIGINT)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()


def test_a_web_process_with_its_certificate_joins_the_tls_cluster_and_trains_a_run(cluster):
    async def learner():
        session = await PageSession.open(cluster.web.url, "live-run", RUN.format(steps=1))
        await session.settle()
        await session.click("Start")
        while not finished_runs(cluster.runs):
            await asyncio.sleep(0.5)
        await session.close()

    asyncio.run(asyncio.wait_for(learner(), 120))
    (run,) = finished_runs(cluster.runs)
    assert [m["step"] for m in run.metrics] == [1]
    # The worker, and its nanny, listen over TLS too: the scheduler reaches them with its own certificate.
    workers = cluster.client.scheduler_info()["workers"]
    assert [(address.split("://")[0], worker["nanny"].split("://")[0]) for address, worker in workers.items()] == [("tls", "tls")]
    assert "Traceback" not in cluster.web.log()


def handshake_answer(port: int, ca: Path, certificate: Path | None) -> bytes:
    """A raw TLS connection to the scheduler, trusting `ca`, showing `certificate` (and its key) or none: what the
    scheduler says first (Dask's greeting), or b"" when it closes the connection instead."""
    context = ssl.create_default_context(cafile=str(ca))
    context.check_hostname = False  # Dask's certificates name parts, not hosts
    if certificate is not None:
        context.load_cert_chain(certificate, certificate.with_name(certificate.stem + "-key.pem"))
    with socket.create_connection(("127.0.0.1", port), timeout=REFUSAL_SECONDS) as raw:
        try:
            with context.wrap_socket(raw) as connection:
                return connection.recv(64)  # TLS 1.3: the server judges the client's certificate after the handshake
        except (ssl.SSLError, ConnectionResetError):
            return b""


def test_a_client_without_a_certificate_is_refused(cluster):
    ca = cluster.certificates / "ca.pem"
    assert handshake_answer(cluster.port, ca, cluster.certificates / "web.pem")  # the same connection with one is greeted
    assert handshake_answer(cluster.port, ca, None) == b""
    started = time.monotonic()
    with pytest.raises(OSError):
        Client(f"tcp://127.0.0.1:{cluster.port}", timeout=REFUSAL_SECONDS, set_as_default=False)  # nor is plain tcp:// let in
    assert time.monotonic() - started < REFUSAL_SECONDS


@pytest.mark.parametrize("trusting", ["the cluster's CA", "its own CA"])
def test_a_client_whose_certificate_another_ca_signed_is_refused(cluster, trusting):
    """Refused by the scheduler (the client trusts the cluster's CA), or already by the client itself, whose own CA
    did not sign the scheduler's certificate."""
    ca = cluster.certificates / "ca.pem" if trusting == "the cluster's CA" else cluster.other / "ca.pem"
    started = time.monotonic()
    with pytest.raises(OSError):
        Client(cluster.scheduler, security=client_security(cluster.other, ca=ca), timeout=REFUSAL_SECONDS, set_as_default=False)
    assert time.monotonic() - started < REFUSAL_SECONDS
    assert len(cluster.client.scheduler_info()["workers"]) == 1  # and the cluster goes on


def test_serve_refused_by_a_tls_scheduler_says_so_in_one_sentence_and_exits_2(cluster):
    """The certificate of another CA, named in a Dask configuration file (DASK_CONFIG); and no TLS settings at all."""
    config = cluster.tmp / "other-ca.yaml"
    other = cluster.other
    config.write_text(yaml.safe_dump({"distributed": {"comm": {"require-encryption": True, "tls": {
        "ca-file": str(cluster.certificates / "ca.pem"),
        "client": {"cert": str(other / "web.pem"), "key": str(other / "web-key.pem")}}}}}))
    bare = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    serve = [sys.executable, "-m", "app.cli", "serve", "--scheduler", cluster.scheduler]
    tries = {"another CA": bare | {"DASK_CONFIG": str(config)}, "no certificate": bare}
    processes = {name: subprocess.Popen([*serve, "--port", str(free_port())], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True) for name, env in tries.items()}
    said = {}
    for name, process in processes.items():
        said[name] = process.communicate(timeout=120)[1].strip().splitlines()
        assert process.returncode == 2, said[name]
    prefix = f"feedback-lab serve: error: The Dask scheduler at {cluster.scheduler} cannot be reached"
    assert said["another CA"] == [f"{prefix} (it ended the TLS handshake, as it does when its CA did not sign this process's "
                                  "certificate)."]
    assert said["no certificate"] == [f"{prefix}: this process lacks TLS settings (set DASK_DISTRIBUTED__COMM__TLS__CA_FILE "
                                      "and DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT; see docs/tls.md)."]


def test_the_compose_file_publishes_no_dask_port_and_its_tls_file_only_the_tls_scheduler():
    assert {name for name, service in SERVICES.items() if "ports" in service} == {"nginx"}
    assert {name: service["ports"] for name, service in TLS_SERVICES.items() if "ports" in service} == {"scheduler": ["8786:8786"]}
    # Every Dask part of the TLS file speaks TLS only, with a certificate of its own.
    assert set(TLS_SERVICES) == {name for name, service in SERVICES.items() if name != "nginx"}
    for service in TLS_SERVICES.values():
        assert "tcp://" not in service["command"]
        assert service["environment"]["DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION"] == "True"
        # The CA's certificate, its own certificate and its key, each named by one of its Dask settings.
        assert len(service["secrets"]) == 3
        assert {v for v in service["environment"].values() if v.startswith("/run/secrets/")} == {
            f"/run/secrets/{secret}" for secret in service["secrets"]}


def test_tls_settings_naming_a_missing_file_or_a_key_of_another_certificate_are_one_sentence(tmp_path):
    certificates = make_certificates(tmp_path / "tls")
    address, tls = "tls://127.0.0.1:8786", "distributed.comm.tls."
    web = {tls + "ca-file": str(certificates / "ca.pem"), tls + "client.cert": str(certificates / "web.pem"),
           tls + "client.key": str(certificates / "web-key.pem")}
    with dask.config.set(web):
        check_tls_settings(address)  # the web processes' own files load
    missing = tmp_path / "nowhere.pem"
    with dask.config.set(web | {tls + "client.cert": str(missing)}):
        with pytest.raises(SchedulerUnreachable) as unreadable:
            check_tls_settings(address)
    assert str(unreadable.value) == (f"The Dask scheduler at {address} cannot be reached: the TLS file {missing} "
                                     "(DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT) cannot be read (No such file or directory).")
    with dask.config.set(web | {tls + "client.key": str(certificates / "worker-key.pem")}):
        with pytest.raises(SchedulerUnreachable) as mismatched:
            check_tls_settings(address)
    assert str(mismatched.value).startswith(f"The Dask scheduler at {address} cannot be reached: this process's TLS files do "
                                            "not load as a PEM certificate and its key ([X509: KEY_VALUES_MISMATCH]")


def test_a_tls_client_of_a_scheduler_without_tls_hears_that_it_does_not_speak_tls(tmp_path):
    """A plain tcp:// scheduler greets first: into the TLS handshake or before it, whichever way the race goes, and
    both are told alike. (It logs the handshake it read as a Dask frame of absurd length, hence its own log file.)"""
    port = free_port()
    scheduler = subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--port", str(port), "--no-dashboard", *LOOPBACK_ONLY],
                                 cwd=ROOT, stdout=subprocess.DEVNULL, stderr=(tmp_path / "scheduler.log").open("w"))
    try:
        security = client_security(make_certificates(tmp_path / "tls"))
        wait_until(lambda: answers_tcp(port), 60, "the plain scheduler")
        with pytest.raises((OSError, ValueError)) as refused:  # what Cluster.start turns into SchedulerUnreachable
            Client(f"tls://127.0.0.1:{port}", security=security, timeout=REFUSAL_SECONDS, set_as_default=False)
    finally:
        scheduler.send_signal(signal.SIGINT)
        scheduler.wait(15)
    assert refusal(refused.value) == "it does not speak TLS: a tcp:// scheduler"


def answers_tcp(port: int) -> bool:
    """Whether something listens on loopback's `port`."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False
