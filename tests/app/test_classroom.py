"""`feedback-lab serve --class`: the address learners type, the hosts allowed, the lines printed; only those hosts open
sessions (tests/app/test_origins.py); the room view shows the learners' URL and its QR code.

Quick: no process is started (the server itself is started by tests/browser/test_lesson_command.py).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from app.cli import build_parser, serving_plan
from app.serving import classroom, room
from app.serving.classroom import NO_LAN, lan_address, lines, plan, serving_lines
from app.serving.web_processes import default_origins
from widgets.qr_code import join_html, qr_svg

LAN = "192.168.1.20"


def no_route() -> str:
    raise OSError("Network is unreachable")


def test_the_learners_address_is_the_one_that_routes_outward_else_another_interfaces_else_none():
    assert lan_address(lambda: LAN, lambda: ["10.0.0.7"]) == LAN
    assert lan_address(no_route, lambda: ["127.0.0.1", "169.254.3.4", "10.0.0.7", "172.16.0.2"]) == "10.0.0.7"
    assert lan_address(lambda: "127.0.0.1", lambda: ["127.0.0.1", "10.0.0.7"]) == "10.0.0.7"  # a route through loopback
    assert lan_address(no_route, lambda: ["127.0.0.1"]) is None  # loopback only
    found = lan_address()  # this machine's, whatever it is: never loopback
    assert found is None or classroom.reachable(found)


def test_a_class_listens_everywhere_and_allows_exactly_the_learners_address_and_localhost():
    args = build_parser().parse_args(["serve", "--class", "--port", "8123"])
    address, origins, the_class = serving_plan(args, LAN)
    assert (address, origins) == ("0.0.0.0", [f"{LAN}:8123", "localhost:8123"])
    assert the_class.learners_url == f"http://{LAN}:8123/" and the_class.teacher_base == "http://localhost:8123"
    assert the_class.note == ""
    assert not build_parser().parse_args(["serve"]).classroom


def test_options_given_win_over_the_class_choices():
    explicit = plan("10.1.2.3", 8000, None, LAN)  # an address given: learners and teacher both use it
    assert (explicit.address, explicit.learners, explicit.teacher, explicit.origins) == ("10.1.2.3", "10.1.2.3:8000", "10.1.2.3:8000", ["10.1.2.3:8000"])
    named = plan(None, 8000, ["lab.example:80", "localhost:8000"], LAN)  # the hosts given, the first one the learners'
    assert (named.address, named.learners, named.teacher, named.origins) == ("0.0.0.0", "lab.example:80", "localhost:8000",
                                                                             ["lab.example:80", "localhost:8000"])
    assert plan(None, 8000, ["lab.example:80"], LAN).teacher == "lab.example:80"
    assert plan("::", 8000, None, None).learners == "localhost:8000"


def test_a_machine_with_only_loopback_is_said_in_one_sentence_and_serves_on_localhost():
    alone = plan(None, 5006, None, None)
    assert (alone.address, alone.learners, alone.origins) == ("localhost", "localhost:5006", ["localhost:5006"])
    assert alone.note == NO_LAN and NO_LAN.count(". ") == 0 and NO_LAN.endswith(".")
    assert lines(alone, "http://localhost:5006/room?token=t", qr=False)[0] == NO_LAN


def test_the_printed_lines_give_the_learners_url_its_qr_code_and_the_teachers_link():
    the_class = plan(None, 5006, None, LAN)
    link = "http://localhost:5006/room?token=secret-of-the-teacher"
    printed = lines(the_class, link)
    assert printed[0] == f"Learners open http://{LAN}:5006/ (or scan this code):"
    code = printed[1].splitlines()
    assert len(code) > 10 and all(set(row) <= set("█▀▄ ") for row in code) and len({len(row) for row in code}) == 1
    assert printed[-1] == f"The teacher's room view (keep this link to yourself): {link}"
    assert "0.0.0.0" not in "\n".join(printed)


def test_no_printed_link_starts_with_0_0_0_0(monkeypatch):
    monkeypatch.setattr(classroom, "lan_address", lambda: LAN)
    assert default_origins("0.0.0.0", 5006) == [f"{LAN}:5006", "localhost:5006", "127.0.0.1:5006"]
    assert default_origins("localhost", 5006) == ["localhost:5006", "127.0.0.1:5006"]
    origins = default_origins("0.0.0.0", 5006)
    assert serving_lines(origins, "http://x/room")[0] == f"Feedback Lab serves http://{LAN}:5006/"
    monkeypatch.setattr(classroom, "lan_address", lambda: None)
    assert default_origins("0.0.0.0", 5006)[0] == "localhost:5006"


def test_the_qr_code_is_an_image_named_by_its_url():
    url = f"http://{LAN}:5006/"
    svg = ET.fromstring(qr_svg(url))
    assert svg.get("role") == "img" and svg.get("aria-label") == f"QR code of {url}"
    assert f'href="{url}"' in join_html(url) and "Learners open" in join_html(url)


def test_the_room_view_shows_the_learners_url_the_server_was_given_and_nothing_without_it(monkeypatch, tmp_path):
    from app.pages import room as room_page
    from app.serving.room import LocalBoard, Room

    monkeypatch.setattr(room, "LEARNERS_URL", None)
    assert room_page.RoomView(room=Room(LocalBoard()), runs_dir=tmp_path).join == []
    room.install_learners_url(f"http://{LAN}:5006/")
    view = room_page.RoomView(room=Room(LocalBoard()), runs_dir=tmp_path)
    shown = view.join[1].object
    assert f'aria-label="QR code of http://{LAN}:5006/"' in shown and f">http://{LAN}:5006/</a>" in shown
