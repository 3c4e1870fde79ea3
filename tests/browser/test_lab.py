"""The lab page in Chromium: the exercises listed, and the notebook downloaded as shipped."""

import json

from app.lab import EXERCISES, NOTEBOOK


def test_the_lab_page_lists_the_exercises_and_downloads_the_notebook(open_page, console_errors):
    page = open_page("lab")
    for exercise in EXERCISES:
        assert page.get_by_text(f"Exercise {exercise.number} · {exercise.title}").count() == 1
    with page.expect_download() as download:
        page.get_by_text(f"Download the notebook ({NOTEBOOK.name})").click()
    assert download.value.suggested_filename == NOTEBOOK.name
    with open(download.value.path(), encoding="utf-8") as got:
        assert json.load(got) == json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    assert console_errors == []
