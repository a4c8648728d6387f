"""`--set policies=["fresh","share"]` typed as sweep's help showed it reaches mtpsim as
`policies=[fresh,share]` (the shell takes the quotes): it is read as the two policies, as
`policies=fresh,share` is, not refused as '[fresh' and 'share]'."""

import pytest

from mtpsim.errors import SpecError
from mtpsim.spec import load_experiment

PR = "experiments/pr47352.toml"


@pytest.mark.parametrize("value", ['["fresh","share"]', "[fresh,share]", "fresh, share",
                                   "[ 'fresh', share ]"])
def test_the_list_forms_read_alike(value):
    assert load_experiment(PR, [f"policies={value}"]).policies == ("fresh", "share")


def test_an_unknown_policy_is_still_refused():
    with pytest.raises(SpecError, match="policies: expected a non-empty list of distinct policies"):
        load_experiment(PR, ["policies=[fresh,bogus]"])
