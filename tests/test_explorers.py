"""Every claim has an explorer: built headless through ``widgets.explorer_for``, it answers its controls.

For each of the 40 claims the ledger names an explorer (``explorer`` in claims.toml);
the test builds it without a display, moves one control to another allowed value and
asserts that the picture or the text changed. Claims the ledger gives no explorer yet
are listed as expected failures (their count is the work left); one that gains an
explorer is tested like the rest.
"""

from __future__ import annotations

import pytest

from llmmath import claims, explorers, widgets

# Claims the ledger gives no explorer yet (issue 13): explorer_for raises KeyError for them.
NO_EXPLORER_YET = {c.id for c in claims.all_claims() if not c.explorer}


def _params():
    for c in claims.all_claims():
        marks = [pytest.mark.xfail(strict=True, reason="no explorer yet")] if c.id in NO_EXPLORER_YET else []
        yield pytest.param(c.id, marks=marks, id=f"claim{c.id}")


@pytest.mark.parametrize("claim_id", list(_params()))
def test_each_claims_explorer_builds_headless_and_answers_a_control(claim_id):
    ex = widgets.explorer_for(claim_id)
    assert isinstance(ex, widgets.Explorer)
    before = (ex.image.value, ex.text.value)
    name, control = next(iter(ex.controls.items()))
    control.value = widgets.other_value(control)
    after = (ex.image.value, ex.text.value)
    assert after != before, f"claim {claim_id}: moving {name!r} changed neither the picture nor the text"
    assert "Error" not in ex.text.value, f"claim {claim_id}: {name!r} = {control.value!r} gives {ex.text.value}"


def test_the_ledger_names_only_registered_explorers_and_unknown_claims_are_refused():
    for c in claims.all_claims():
        if c.explorer:
            assert c.explorer in explorers.names(), f"claim {c.id} names unknown explorer {c.explorer!r}"
    with pytest.raises(KeyError, match="claim id"):
        widgets.explorer_for(41)
    with pytest.raises(KeyError, match="claim id"):
        widgets.explorer_for(0)
    if NO_EXPLORER_YET:
        with pytest.raises(KeyError, match="no explorer yet"):
            widgets.explorer_for(min(NO_EXPLORER_YET))
    with pytest.raises(KeyError, match="no explorer called"):
        explorers.get("nonexistent_explorer")


def test_the_wall_explorer_answers_each_control():
    # chapter 8's explorer beyond the interview's claims: every control moves the picture or the text
    ex = explorers.wall_explorer()
    for name, control in ex.controls.items():
        before = (ex.image.value, ex.text.value)
        control.value = widgets.other_value(control)
        assert (ex.image.value, ex.text.value) != before, name
        assert "Error" not in ex.text.value and "as much" in ex.text.value, (name, ex.text.value)


def test_boundary_explorer_keeps_the_expert_group_inside_the_scale_up_domain():
    """Claim 20's explorer offers no EP wider than the system's NVLink domain (an HGX H100 box holds 8 GPUs), so it
    never prices a 64-GPU expert group on an 8-GPU box's NVLink (issue 45)."""
    from llmmath.course.explorers import ch06
    ex = ch06.boundary_ratio_explorer()
    assert max(ex.controls["ep"].options) == 64
    ex.controls["system"].value = "hgx-h100"
    assert tuple(ex.controls["ep"].options) == (8,) and ex.controls["ep"].value == 8
