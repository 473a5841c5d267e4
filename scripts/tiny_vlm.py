"""Build a tiny Qwen2-VL model directory for a real vLLM on the CPU, from local files only.

    python scripts/tiny_vlm.py DIR        (run with .venv-vllm's Python: it needs torch,
                                           transformers and tokenizers; scripts/vllm-cpu.sh does)

What it writes, in seconds and without any model hub:
- a byte-level BPE tokenizer (~1,024 entries) trained on a small generated JSON-and-English
  corpus, plus Qwen2-VL's special tokens, and a ChatML chat template that accepts string or
  OpenAI-parts content and puts `<|vision_start|><|image_pad|><|vision_end|>` at each image
  (vLLM expands the pad to the image's tokens);
- config.json (2 text layers of hidden 128, a 2-block vision tower of 64) and the Qwen2-VL
  image processor's config (patch 14, merge 2, max_pixels 1,024,000);
- "steered" weights (model.safetensors, ~1.6 MB): each layer's output projections zero and every
  embedding the same, so the last position's hidden state is a constant whatever the prompt,
  and `lm_head` one fixed score per token: end-of-turn > `"` > `}`/`]` > digits > punctuation
  > other > whitespace (letters of "click" a little above other letters, so an action union
  picks a click and the localizer role is asked). Random weights never close a JSON string (every answer runs to
  max_tokens); under a request's JSON Schema grammar these give the shortest valid JSON, which
  ends with `finish_reason: stop`.

Idempotent: a directory whose stamp matches this script's version is left alone.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

VERSION = "3"
SPECIAL = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] in ['image', 'image_url'] %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TEXT = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "hidden_act": "silu",
    "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6,
    "rope_theta": 1000000.0,
    "use_sliding_window": False,
    "sliding_window": None,
    "max_window_layers": 2,
    "attention_dropout": 0.0,
    "tie_word_embeddings": False,
}
MROPE = [4, 6, 6]  # sums to head_dim / 2 = 128 / 4 / 2
VISION = {
    "depth": 2,
    "embed_dim": 64,
    "hidden_size": 128,  # = the text hidden size: the merger's output
    "num_heads": 2,
    "mlp_ratio": 4,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "in_chans": 3,
    "in_channels": 3,
    "hidden_act": "quick_gelu",
}


def corpus() -> list[str]:
    """Generated JSON and English lines: enough for the merges a JSON answer needs."""
    rng = random.Random(0)
    words = (
        "click type scroll press wait done answer the a of to in on for with button link "
        "search box menu page next previous submit login sign up open close select element "
        "header footer form field name email password price cart home about contact blue red "
        "green top bottom left right first second label title text description action target "
        "thought note status success fail task check point x y value direction down key enter"
    ).split()
    lines = []
    for _ in range(3000):
        sentence = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        lines.append(sentence.capitalize() + rng.choice([".", "?", "!", ":"]))
        obj = {rng.choice(words): rng.choice([rng.randint(0, 1000), sentence, True, None])}
        lines.append(json.dumps(obj) + json.dumps([rng.randint(0, 1000), rng.random()]))
    return lines


def build_tokenizer(out: Path) -> dict[str, int]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer)
    tokenizer.save(str(out / "tokenizer.json"))
    ids = {token: tokenizer.token_to_id(token) for token in SPECIAL}
    added = {
        str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                 "single_word": False, "special": True}
        for t, i in ids.items()
    }  # fmt: skip
    config = {
        "tokenizer_class": "Qwen2TokenizerFast",  # the Qwen2-VL processor needs it (transformers 4)
        "added_tokens_decoder": added,
        "additional_special_tokens": SPECIAL[1:],
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "model_max_length": 32768,
        "clean_up_tokenization_spaces": False,
        "errors": "replace",
        "split_special_tokens": False,
        "chat_template": TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    (out / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                    "additional_special_tokens": SPECIAL[1:]})
    )  # fmt: skip
    (out / "chat_template.json").write_text(json.dumps({"chat_template": TEMPLATE}))
    return {**ids, "vocab": tokenizer.get_vocab_size()}


def write_configs(out: Path, ids: dict[str, int]) -> dict[str, object]:
    tokens = {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    text = {
        **TEXT,
        "vocab_size": ids["vocab"],
        "rope_scaling": {"type": "mrope", "rope_type": "default", "mrope_section": MROPE},
        # transformers 5 reads rope_parameters; 4.x (vLLM 0.14.1's) reads rope_scaling
        "rope_parameters": {"rope_type": "default", "rope_theta": TEXT["rope_theta"],
                            "mrope_section": MROPE},
        "torch_dtype": "bfloat16",
        "model_type": "qwen2_vl_text",
        # transformers 4.57 reads a nested text_config's fields through the outer config, this
        # one too: without it the architecture is None and vLLM serves an embedding model
        "architectures": ["Qwen2VLForConditionalGeneration"],
        **tokens,
    }  # fmt: skip
    config = {
        "architectures": ["Qwen2VLForConditionalGeneration"],
        "model_type": "qwen2_vl",
        **{k: v for k, v in text.items() if k != "model_type"},
        "text_config": text,
        "vision_config": VISION,
    }
    (out / "config.json").write_text(json.dumps(config, indent=1))
    (out / "generation_config.json").write_text(
        json.dumps({"eos_token_id": tokens["eos_token_id"], "pad_token_id": tokens["pad_token_id"]})
    )
    processor = {
        "image_processor_type": "Qwen2VLImageProcessor",
        "processor_class": "Qwen2VLProcessor",
        "do_resize": True,
        "do_rescale": True,
        "rescale_factor": 1 / 255,
        "do_normalize": True,
        "do_convert_rgb": True,
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711],
        "patch_size": 14,
        "merge_size": 2,
        "temporal_patch_size": 2,
        "min_pixels": 3136,
        "max_pixels": 1024000,
    }
    (out / "preprocessor_config.json").write_text(json.dumps(processor, indent=1))
    return config


def token_score(text: str) -> float:
    """The fixed logit of a token: what closes a JSON answer soonest scores highest."""
    if not text:
        return 1.0
    first = text[0]
    if first == '"':
        return 30.0
    if first in "}]":
        return 25.0
    if first.isdigit():
        return 20.0 - int(first) * 0.1  # 0 first: short numbers
    if first.isspace():
        return 0.0
    if not first.isalnum():
        return 15.0
    if "click".startswith(text):
        return 12.0  # where an action union lets it choose, a click (the localizer is then asked)
    return 10.0


def write_weights(out: Path, ids: dict[str, int]) -> None:
    import torch
    from transformers import AutoConfig, AutoTokenizer, Qwen2VLForConditionalGeneration

    torch.manual_seed(0)
    config = AutoConfig.from_pretrained(out)
    model = Qwen2VLForConditionalGeneration(config).to(torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(out)
    hidden = TEXT["hidden_size"]
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith(("o_proj.weight", "down_proj.weight")) and "visual" not in name:
                param.zero_()  # no layer writes to the residual stream
            elif name.endswith("embed_tokens.weight"):
                param.fill_(1.0)  # every token the same: the hidden state is a constant
            elif "norm" in name and "visual" not in name and name.endswith("weight"):
                param.fill_(1.0)
        scores = torch.tensor(
            [token_score(tokenizer.decode([i])) for i in range(ids["vocab"])]
        )
        scores[ids["<|im_end|>"]] = 40.0  # end of turn whenever the grammar allows it
        for token in SPECIAL:
            if token != "<|im_end|>":
                scores[ids[token]] = -40.0
        # RMSNorm(ones) = ones, so row t of lm_head scaled by 1/hidden gives logit scores[t]
        model.lm_head.weight.copy_(scores[:, None].expand(-1, hidden) / hidden)
    model.save_pretrained(out, safe_serialization=True)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = Path(sys.argv[1])
    stamp = out / ".tiny-vlm"
    if stamp.exists() and stamp.read_text() == VERSION:
        return 0
    out.mkdir(parents=True, exist_ok=True)
    ids = build_tokenizer(out)
    write_configs(out, ids)
    write_weights(out, ids)
    # save_pretrained rewrites config.json in transformers' own shape; keep ours (both rope forms)
    write_configs(out, ids)
    stamp.write_text(VERSION)
    print(f"tiny Qwen2-VL model in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
