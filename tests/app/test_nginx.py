"""deploy/nginx.conf on loopback: two app processes behind nginx with ip_hash, a page and its websocket through it."""

import re
import shutil
import subprocess
import time

from pathlib import Path

import pytest

from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]


NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if shutil.os.path.exists(p)), None)
pytestmark = pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)")


def loopback_config(tmp_path, proxy_port: int, app_ports: tuple[int, int]) -> str:
    """deploy/nginx.conf with loopback ports, and its files in tmp_path instead of the system's."""
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    text = text.replace("server 127.0.0.1:5006;", f"server 127.0.0.1:{app_ports[0]};").replace("server 127.0.0.1:5007;", f"server 127.0.0.1:{app_ports[1]};")
    text = text.replace("listen 80;", f"listen 127.0.0.1:{proxy_port};")
    text = text.replace("http {", f"http {{\n    access_log {tmp_path}/access.log;\n    client_body_temp_path {tmp_path}/body;\n    proxy_temp_path {tmp_path}/proxy;")
    return f"daemon off;\npid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\n" + text


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
        document = proxy.open_session("baselines")  # HTTP GET, then the websocket upgraded through nginx
        assert "Baselines" in document
        status, body = proxy.get("/")
        assert status == 200 and re.search(r'"token":"', body)
    finally:
        nginx.terminate()
        nginx.wait(10)
