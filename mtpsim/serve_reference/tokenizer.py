"""A Hugging Face tokenizer for the reference engine's vocabulary (token id = byte value), so
tools that need a tokenizer (`vllm bench serve --tokenizer DIR`) can drive the reference
server. Written on demand (tokenizers + transformers come with vLLM's requirements)."""

from __future__ import annotations

import json
from pathlib import Path


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in character for each byte, as the ByteLevel decoder expects."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
          *range(ord("®"), ord("ÿ") + 1)]
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


def write_byte_tokenizer(folder: str | Path) -> Path:
    """Save a byte-level tokenizer (256 ids, no merges, EOS = byte 0) to `folder`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    b2u = _bytes_to_unicode()
    tok = Tokenizer(models.BPE(vocab={b2u[b]: b for b in range(256)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    folder = Path(folder)
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=b2u[0]).save_pretrained(str(folder))
    # Tools that read the model config next to a tokenizer (vLLM) need a model_type.
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "vocab_size": 256,
                                                    "eos_token_id": 0}) + "\n")
    return folder
