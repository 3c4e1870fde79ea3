"""Sessions share nothing: each builds its own page objects. (Resident memory over many open-and-close
cycles is measured by hand: `python -m bench.soak`.)"""

from app.pages import available_pages


def test_two_sessions_get_distinct_page_objects_sharing_no_mutable_state():
    for info in available_pages():
        first, second = info.module.page(), info.module.page()
        assert first is not second
        shared = [
            name for name, value in vars(first).items()
            if isinstance(value, (list, dict, set)) and value and vars(second).get(name) is value
        ]
        assert not shared, (info.name, shared)
        for close in (getattr(first, "close", None), getattr(second, "close", None)):
            if close:
                close()
