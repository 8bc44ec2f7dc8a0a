"""get_reward / register_reward / combine."""

import json

import pytest

import rewards.registry as registry
from rewards import RewardNotFoundError, combine, get_reward, register_reward
from rewards.examples import BrevityReward, keyword_reward
from tasks.fund_assistant.rewards import MultistepGTReward, gt_reward, rule_reward

GOOD = json.dumps(
    {"thought": "因为要查余额", "action": {"tool": "check_balance", "params": {}}, "plan": ["check"]},
    ensure_ascii=False,
)
LABEL = json.dumps({"action": {"tool": "check_balance", "params": {}}})


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))


def test_builtins():
    assert get_reward("rule") is rule_reward
    assert get_reward("gt") is gt_reward and get_reward("multistep_gt") is gt_reward
    assert isinstance(get_reward(" gt "), MultistepGTReward)
    assert get_reward(rule_reward) is rule_reward  # a callable passes through
    assert set(registry.known_rewards()) >= {"rule", "gt", "multistep_gt"}


def test_import_paths():
    assert get_reward("rewards.examples:keyword_reward") is keyword_reward
    assert get_reward("tasks.fund_assistant.rewards:rule_reward") is rule_reward
    brevity = get_reward("rewards.examples:BrevityReward")  # a class is instantiated with no args
    assert isinstance(brevity, BrevityReward)
    assert brevity(None, ["ab", "x" * 2000]) == [1.0, 0.0]
    assert keyword_reward(None, [GOOD, "nothing"]) == [1.0, 0.0]
    assert keyword_reward(None, ["I sell", "I buy"], keywords=[["SELL"], ["sell"]]) == [1.0, 0.0]


@pytest.mark.parametrize(
    "bad",
    ["nope", "", "rewards.examples", "rewards.examples:", ":keyword_reward", "rewards.examples:missing",
     "no_such_module_xyz:fn", "rewards.examples:DEFAULT_KEYWORDS", "tasks.fund_assistant.rewards:MARKET_TOOL",
     None, 5],
)
def test_unknown_names_raise_listing_known_names(bad):
    with pytest.raises(RewardNotFoundError) as err:
        get_reward(bad)
    assert isinstance(err.value, ValueError)
    for name in ("rule", "gt", "multistep_gt"):
        assert name in str(err.value)


def test_class_needing_arguments_is_reported(clean_registry):
    @register_reward("needs_args")
    class NeedsArgs:
        def __init__(self, x):
            self.x = x

        def __call__(self, prompts, completions, **columns):
            return [0.0] * len(completions)

    with pytest.raises(RewardNotFoundError, match="no arguments"):
        get_reward("needs_args")


def test_register_reward(clean_registry):
    @register_reward("always_half")
    def always_half(prompts, completions, **columns):
        return [0.5] * len(completions)

    assert get_reward("always_half") is always_half
    assert "always_half" in registry.known_rewards()
    register_reward("always_half")(always_half)  # same object again: fine
    with pytest.raises(ValueError, match="already registered"):
        register_reward("rule")(always_half)
    register_reward("rule", overwrite=True)(always_half)
    assert get_reward("rule") is always_half
    with pytest.raises(TypeError):
        register_reward("x")(42)


def test_combine_weights():
    combined = combine([("rule", 0.25), (gt_reward, 0.75)])
    completions = [GOOD, "junk", json.dumps({"action": {"tool": "check_market_status", "params": {}}})]
    columns = {"solution": [LABEL] * 3, "category": ["balance"] * 3}
    prompts = ["查余额"] * 3
    rule, gt = rule_reward(prompts, completions, **columns), gt_reward(prompts, completions, **columns)
    expected = [0.25 * r + 0.75 * g for r, g in zip(rule, gt)]
    assert combined(prompts=prompts, completions=completions, **columns) == pytest.approx(expected)
    assert combined(prompts, completions, **columns)[0] == pytest.approx(1.0)
    assert combined.__name__ == "0.25*rule_reward+0.75*multistep_gt"


def test_combine_none_scores_and_errors():
    def sometimes(prompts, completions, **columns):  # TRL: None means "not applicable"
        return [None, 1.0]

    def wrong_length(prompts, completions, **columns):
        return [1.0]

    assert combine([(sometimes, 2.0)], name="s")(None, ["a", "b"]) == [0.0, 2.0]
    with pytest.raises(ValueError, match="returned 1 scores"):
        combine([(wrong_length, 1.0)])(None, ["a", "b"])
    with pytest.raises(ValueError):
        combine([])
    with pytest.raises(ValueError):
        combine([("rule", float("nan"))])
    with pytest.raises(RewardNotFoundError):
        combine([("nope", 1.0)])
