"""Settings read ``MEMLOCI_*`` variables (arguments win) without pydantic-settings."""

from __future__ import annotations

import pytest

from memloci import Memory
from memloci.config import Settings
from memloci.errors import ValidationError


def test_variables_fill_settings_and_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMLOCI_MAX_MEMORIES", "5")
    monkeypatch.setenv("memloci_reinforce_on_search", "false")  # names are case-insensitive
    monkeypatch.setenv("MEMLOCI_EMBEDDER_OPTIONS", '{"threads": 1}')  # dicts and lists: JSON
    monkeypatch.setenv("MEMLOCI_ALLOWED_HOSTS", '["memory.example.org"]')
    monkeypatch.setenv("MEMLOCI_MAINTENANCE_TIME", "4:5")
    s = Settings()
    assert s.max_memories == 5 and s.reinforce_on_search is False
    assert s.embedder_options == {"threads": 1} and s.allowed_hosts == ["memory.example.org"]
    assert s.maintenance_time == "04:05"  # validators run on variables too
    assert Settings(max_memories=7).max_memories == 7
    assert Settings().namespace == "default" and Settings().maintenance_time == "04:05"


def test_unknown_variables_are_ignored_and_unknown_arguments_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMLOCI_NOT_A_SETTING", "x")
    assert Settings().path == "memloci.db"
    with pytest.raises(Exception, match="not_a_setting"):
        Settings(not_a_setting=1)


@pytest.mark.parametrize(
    ("name", "value", "field"),
    [
        ("MEMLOCI_EMBEDDER_OPTIONS", "{not json", "embedder_options"),
        ("MEMLOCI_CANDIDATES", "many", "candidates"),
        ("MEMLOCI_NAMESPACE", "bad namespace!", "namespace"),
    ],
)
def test_a_bad_variable_is_a_clear_error_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, field: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=f"invalid.*{field}"):
        Memory(":memory:", embedder="none")


def test_the_reference_name_of_a_setting_is_taken() -> None:
    """Reference 002's manifest calls it ``causal_inference_batch_size``."""
    assert Settings(causal_inference_batch_size=10).causal_batch_size == 10
    with pytest.raises(ValidationError, match="one setting"):
        Settings(causal_inference_batch_size=10, causal_batch_size=3)
