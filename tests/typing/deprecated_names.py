"""A user's script still written against the names deprecated for one release, type-checked by
CI's mypy run as user_script.py is: they type-check as the new names (their warning comes at
run time: tests/calibration/test_deprecated_name.py)."""

from typing_extensions import assert_type

from groundsense.calibration import Calibration, RankFusion
from groundsense.detection import Detection, check_detection
from groundsense.judging import fusion
from groundsense.judging.calibration import Calibration as OldCalibration
from groundsense.scorer import Scorer
from groundsense.verification import answer_token_ids


def old_names(detection: object) -> None:
    assert_type(OldCalibration, type[Calibration])
    assert_type(fusion.RankFusion, type[RankFusion])
    assert_type(check_detection(detection), Detection)  # mypy --enable-error-code deprecated: a warning


def old_verifier_names(scorer: Scorer) -> None:
    assert_type(answer_token_ids(scorer, ("Yes",)), list[int])
