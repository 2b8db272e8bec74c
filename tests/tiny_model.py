"""A tiny random-weight Qwen3 model with a BPE tokenizer trained on the bundled sample, so that the real vLLM
engine can run in tests on CPU without downloading weights.

    path = ensure_tiny_model()   # builds once, then reused from the cache

The model is saved with `transformers` (Qwen3ForCausalLM, random init) and the tokenizer as a
`PreTrainedTokenizerFast` with a ChatML template, as a Qwen3 checkpoint has them. Its outputs are noise, but
token counts, prefix caching, seeds and context limits behave as with a real model.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]

# ChatML as Qwen3 writes it; `enable_thinking=false` pre-fills an empty thinking block, like Qwen3's template.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    layers: int = 2
    hidden: int = 128
    heads: int = 2
    kv_heads: int = 1
    head_dim: int = 64  # vLLM's CPU attention kernels reject small head sizes such as 16
    intermediate: int = 256
    vocab: int = 4096  # the BPE target; the model's vocabulary is the trained size rounded up to 64
    max_positions: int = 32768
    seed: int = 0
    builder_version: int = 1  # bump when the files this module writes change


def corpus_files() -> list[Path]:
    """The bundled sample when it is there; else the package's own sources, which are text enough."""
    from awbench.resources import sample_dir

    return sorted(sample_dir().glob("*.jsonl")) or sorted((REPO / "awbench").rglob("*.py"))


def corpus_texts(files: list[Path]) -> list[str]:
    texts: list[str] = []
    for path in files:
        if path.suffix != ".jsonl":
            texts.append(path.read_text(encoding="utf-8"))
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a blank or broken line: the corpus only needs text
            texts += [record.get("system_str", ""), *record.get("prompt", []), *record.get("response", [])]
    return [t for t in texts if t]


def cache_root() -> Path:
    env = os.environ.get("AWBENCH_TEST_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "awbench-tests"


def model_dir_for(spec: TinySpec, texts: list[str], root: Path) -> Path:
    digest = hashlib.sha256(json.dumps([asdict(spec), texts]).encode()).hexdigest()[:16]
    return root / f"tiny-qwen3-{digest}"


def build_tokenizer(texts: list[str], vocab: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    # Byte-level BPE: any text encodes, as with Qwen's own tokenizer, so unseen prompts never hit an unknown token.
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
        model_max_length=1_000_000,
    )


def build_model(spec: TinySpec, tokenizer, out: Path) -> None:
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(spec.seed)
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen3Config(
        vocab_size=-(-len(tokenizer) // 64) * 64,
        hidden_size=spec.hidden,
        intermediate_size=spec.intermediate,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        bos_token_id=pad,
        eos_token_id=eos,
        pad_token_id=pad,
        dtype="bfloat16",
    )
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad, bos_token_id=pad)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def ensure_tiny_model(spec: TinySpec = TinySpec(), root: Path | None = None) -> Path:
    """The model's directory, built on first use. Built beside its final place and renamed into it, so a
    concurrent or interrupted build never leaves a half-written model behind."""
    texts = corpus_texts(corpus_files())
    target = model_dir_for(spec, texts, root or cache_root())
    if (target / "config.json").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        build_model(spec, build_tokenizer(texts, spec.vocab), staging)
        staging.rename(target)
    except OSError:
        if not (target / "config.json").exists():  # not a lost race with another build: a real failure
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


if __name__ == "__main__":
    print(ensure_tiny_model())
