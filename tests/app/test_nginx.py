"""deploy/nginx.conf on loopback: two app processes behind nginx, a page and its websocket through it to one process,
kept there by the cookie nginx sets."""

import asyncio
import json
import re
import subprocess
import time

import pytest

from bench.servers import NGINX, document_roots, free_port, get_page, loopback_config, pull_document, wait_until

pytestmark = [pytest.mark.server, pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)")]


def test_a_page_and_its_websocket_through_nginx(tmp_path, app_server):
    proxy_port = free_port()
    origin = f"--allow-websocket-origin=localhost:{proxy_port}"
    servers = [app_server(origin) for _ in range(2)]
    ports = tuple(int(s.url.rsplit(":", 1)[1]) for s in servers)
    (tmp_path / "nginx.conf").write_text(loopback_config(tmp_path, proxy_port, ports))
    nginx = subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")], stderr=subprocess.PIPE)
    try:
        proxy = type(servers[0])(f"http://localhost:{proxy_port}", nginx, tmp_path / "error.log")
        for _ in range(50):
            try:
                if proxy.get("/healthz", timeout=2) == (200, "ok"):
                    break
            except OSError:
                time.sleep(0.1)
        for _ in range(6):  # six new browsers: each page's websocket reaches the process that built the page
            token, headers, html = get_page(proxy.url, "baselines", "")
            document = asyncio.run(pull_document(proxy.url, "baselines", token, headers))
            assert "Baselines" in document and headers["Cookie"].startswith("feedback_lab_process=")
            assert {root["id"] for root in json.loads(document)["doc"]["roots"]} == document_roots(html)
        status, body = proxy.get("/")
        assert status == 200 and re.search(r'"token":"', body)
        assert proxy.get("/room?token=guessed-by-a-visitor")[0] == 403
        # nginx writes a request's line once it has sent the answer, so the client may read the log before it is there.
        wait_until(lambda: '"GET /room" 403' in (tmp_path / "paths.log").read_text(), 10, "nginx to log the request")
        assert "token" not in (tmp_path / "paths.log").read_text()  # nginx's own log keeps paths, never queries
    finally:
        nginx.terminate()
        nginx.wait(10)
