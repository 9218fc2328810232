"""The names before issue #54 still work for one release, with a DeprecationWarning:
``groundsense.judging`` and ``groundsense.verification.fusion`` import as
``groundsense.calibration`` and ``groundsense.calibration.judge_fusion``, and
``groundsense.verification.answer_token_ids`` is ``reply_token_ids``."""

import subprocess
import sys


def imported_by_its_old_name(old: str, checks: str) -> tuple[str, str]:
    """In a fresh interpreter: the DeprecationWarning that importing ``old`` raises, and what
    ``checks`` (code run afterwards, warnings ignored) prints."""
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            f"try:\n    import {old}\nexcept DeprecationWarning as w:\n    print(w)\n"
            "warnings.simplefilter('ignore')\n" + checks)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    warning, printed = done.stdout.splitlines()
    return warning, printed


def test_the_old_package_name_imports_the_new_modules_and_warns():
    warning, same = imported_by_its_old_name("groundsense.judging", (
        "from groundsense.judging.calibration import Calibration\n"
        "import groundsense.judging.fusion as old, groundsense.calibration.fusion as new\n"
        "from groundsense.calibration.calibration import Calibration as Current\n"
        "print(Calibration is Current, old is new)"))
    assert "groundsense.judging is now groundsense.calibration" in warning
    assert same == "True True"


def test_the_old_judge_fusion_module_imports_the_new_one_and_warns():
    warning, same = imported_by_its_old_name("groundsense.verification.fusion", (
        "from groundsense.verification.fusion import fusion_for\n"
        "from groundsense.calibration import judge_fusion\n"
        "print(fusion_for is judge_fusion.fusion_for)"))
    assert "groundsense.verification.fusion is now groundsense.calibration.judge_fusion" in warning
    assert same == "True"


def test_the_judges_old_reply_reader_name_is_the_new_function_and_warns():
    import warnings

    import groundsense.verification as verification

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = verification.answer_token_ids
    assert old is verification.reply_token_ids
    assert "answer_token_ids is now groundsense.verification.reply_token_ids" in str(caught[0].message)
