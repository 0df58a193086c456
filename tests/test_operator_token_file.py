"""The operator token file of ``handoffs serve`` is refused when its token is easy to guess."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoffs_runtime.cli.options import token_from_file
from handoffs_runtime.errors import HandoffsError


@pytest.mark.parametrize("token", ["aaaaaaaaaaaaaaaa", "abcdabcdabcdabcd", "abcdefghijklmnop"])
def test_a_hand_written_operator_token_is_refused_naming_the_fix(tmp_path: Path, token: str) -> None:
    path = tmp_path / "operator.token"
    path.write_text(token + "\n", encoding="utf-8")
    with pytest.raises(HandoffsError, match="too easy to guess") as refused:
        token_from_file(path, what="operator token")
    assert "token_urlsafe" in str(refused.value)


def test_a_random_operator_token_is_read(tmp_path: Path) -> None:
    path = tmp_path / "operator.token"
    path.write_text("q3Vx-9LkPz_2mWcTnB8sYe4R\n", encoding="utf-8")
    assert token_from_file(path, what="operator token") == "q3Vx-9LkPz_2mWcTnB8sYe4R"
