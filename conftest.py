"""pytest: tests never write a prediction record into the repository."""
import pytest


@pytest.fixture(autouse=True)
def _prediction_record_in_tmp(tmp_path, monkeypatch):
    # a passing form check commits the prediction to .predictions.jsonl in the working folder
    # (course_lib.predictions): here, a fresh temporary folder per test
    from course_lib import predictions

    monkeypatch.setattr(predictions, "_HERE", tmp_path)
