"""Progress lines for logs (stderr not a terminal)."""

from groundsense.progress import logged, progress_line, track


def test_progress_line_has_counts_elapsed_and_eta():
    assert (progress_line("Scoring answers", 120, 2700, 482.0)
            == "Scoring answers: 120/2,700 (0:08:02 elapsed, ETA 2:52:43)")
    assert progress_line("Rating", 3, None, 5.4) == "Rating: 3 (0:00:05 elapsed)"


def test_logged_writes_the_first_and_last_lines_and_passes_every_item(capsys):
    assert list(logged(range(5), "Work", 5, every_s=3600)) == [0, 1, 2, 3, 4]
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["Work: 1/5", "Work: 5/5"]


def test_track_writes_lines_when_stderr_is_not_a_terminal_and_nothing_when_disabled(capsys, monkeypatch):
    for forced in ("FORCE_COLOR", "TTY_COMPATIBLE"):  # rich would take stderr for a terminal
        monkeypatch.delenv(forced, raising=False)
    assert list(track([1, 2], "Work")) == [1, 2]
    assert "Work: 2/2" in capsys.readouterr().err
    assert list(track([1, 2], "Work", enabled=False)) == [1, 2]
    assert capsys.readouterr().err == ""
