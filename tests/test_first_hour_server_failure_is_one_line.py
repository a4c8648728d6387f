"""A served engine that dies before /health answers is one line: what it means where the log's
line alone does not say it (vLLM on a machine without a GPU: "Failed to infer device type"), else
the log's last error line; the log itself is named, not pasted (the whole vLLM traceback was
embedded with literal newlines)."""

from mtpsim.vllm_runner.process import log_cause

VLLM_NO_GPU = """INFO 12-04 20:00:01 [__init__.py:239] Automatically detected platform
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/vllm/engine/arg_utils.py", line 1200, in create_engine_config
    device_config = DeviceConfig(device=self.device)
RuntimeError: Failed to infer device type
"""


def test_a_known_line_is_said_for_what_it_means():
    cause = log_cause(VLLM_NO_GPU)
    assert "\\n" not in cause and "no GPU visible to vLLM" in cause and "doctor --smoke" in cause


def test_else_the_last_error_line_or_the_last_line():
    assert log_cause("starting\nValueError: bad --weights path\nshutting down\n") == \
        "ValueError: bad --weights path"
    assert log_cause("a\nb\n") == "b" and log_cause("") == "(empty log)"
