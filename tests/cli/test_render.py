"""The terminal view never replays control sequences from the input."""

from groundsense.cli.render import printable


def test_control_and_bidi_characters_are_shown_escaped():
    assert printable("red \x1b[31mtext\x1b[0m\x07") == "red \\x1b[31mtext\\x1b[0m\\x07"
    assert printable("a\u202eb\u2066c\x00") == "a\\u202eb\\u2066c\\x00"
    assert printable("tab\tcafé 🌉 مرحبا 漢字") == "tab\tcafé 🌉 مرحبا 漢字"
