#!/usr/bin/python3
"""A tiny llama-architecture GGUF model with random weights, for serving with llama-server.

It has llama.cpp's real 32k SentencePiece vocabulary (models/ggml-vocab-llama-spm.gguf), 4 layers
of width 128 with grouped-query attention (4 query heads, 2 key/value heads), about 9 million
weights drawn from a fixed seed, and a minimal chat template, so that /v1/chat/completions works.
Its greedy outputs are nonsense, but varied and prompt-dependent, and it serves a request in
well under a second on a CPU. The same arguments give the same bytes every time (--self-check
makes the file twice and compares their SHA-256).

Usage: tiny_llama_model.py --gguf-py SRC/gguf-py --vocab SRC/models/ggml-vocab-llama-spm.gguf
                           --out tiny.gguf [--self-check]
Needs Debian's python3-numpy; gguf-py comes from the llama.cpp source tree.
"""
import argparse
import hashlib
import os
import sys
import tempfile

SEED = 20240612
LAYERS = 4
WIDTH = 128
HEADS = 4
KV_HEADS = 2
FEED_FORWARD = 384
CONTEXT = 4096
# The roles in plain text: the vocabulary has no special chat tokens.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ message['role'] + ': ' + message['content'] + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'assistant:' }}{% endif %}"
)


def vocabulary(gguf, path):
    """The tokenizer fields of the vocabulary-only GGUF file at PATH."""
    reader = gguf.GGUFReader(path)

    def scalar(key):
        field = reader.fields[key]
        return field.parts[field.data[0]].tolist()[0]

    def array(key):
        field = reader.fields[key]
        return [field.parts[i] for i in field.data]

    tokens = [bytes(part).decode("utf-8") for part in array("tokenizer.ggml.tokens")]
    return {
        "model": bytes(reader.fields["tokenizer.ggml.model"].parts[-1]).decode(),
        "tokens": tokens,
        "scores": [float(part[0]) for part in array("tokenizer.ggml.scores")],
        "types": [int(part[0]) for part in array("tokenizer.ggml.token_type")],
        "bos": scalar("tokenizer.ggml.bos_token_id"),
        "eos": scalar("tokenizer.ggml.eos_token_id"),
        "unk": scalar("tokenizer.ggml.unknown_token_id"),
    }


def write_model(gguf, np, vocab, out):
    rng = np.random.default_rng(SEED)
    n_vocab = len(vocab["tokens"])
    head_dim = WIDTH // HEADS

    def weights(rows, cols, scale):
        # numpy shape (rows, cols) is GGUF shape [cols, rows]: rows are output features.
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name("tiny-random-llama")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model(vocab["model"])
    writer.add_tokenizer_pre("default")
    writer.add_token_list(vocab["tokens"])
    writer.add_token_scores(vocab["scores"])
    writer.add_token_types(vocab["types"])
    writer.add_bos_token_id(vocab["bos"])
    writer.add_eos_token_id(vocab["eos"])
    writer.add_unk_token_id(vocab["unk"])
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    ones = np.ones(WIDTH, dtype=np.float32)
    writer.add_tensor("token_embd.weight", weights(n_vocab, WIDTH, 1.0))
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", ones)
        writer.add_tensor(f"{block}.attn_q.weight", weights(WIDTH, WIDTH, WIDTH ** -0.5))
        writer.add_tensor(f"{block}.attn_k.weight", weights(KV_HEADS * head_dim, WIDTH, WIDTH ** -0.5))
        writer.add_tensor(f"{block}.attn_v.weight", weights(KV_HEADS * head_dim, WIDTH, WIDTH ** -0.5))
        writer.add_tensor(f"{block}.attn_output.weight", weights(WIDTH, WIDTH, WIDTH ** -0.5))
        writer.add_tensor(f"{block}.ffn_norm.weight", ones)
        writer.add_tensor(f"{block}.ffn_gate.weight", weights(FEED_FORWARD, WIDTH, WIDTH ** -0.5))
        writer.add_tensor(f"{block}.ffn_up.weight", weights(FEED_FORWARD, WIDTH, WIDTH ** -0.5))
        writer.add_tensor(f"{block}.ffn_down.weight", weights(WIDTH, FEED_FORWARD, FEED_FORWARD ** -0.5))
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", weights(n_vocab, WIDTH, WIDTH ** -0.5))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf-py", required=True, help="the gguf-py folder of the llama.cpp source tree")
    parser.add_argument("--vocab", required=True, help="models/ggml-vocab-llama-spm.gguf of that tree")
    parser.add_argument("--out", required=True, help="where to write the model")
    parser.add_argument("--self-check", action="store_true",
                        help="make the model twice and fail unless both files are the same bytes")
    args = parser.parse_args()

    try:
        import numpy as np
    except ImportError:
        sys.exit("tiny_llama_model.py: numpy is missing; install Debian's python3-numpy (scripts/deps.sh)")
    if not os.path.isfile(os.path.join(args.gguf_py, "gguf", "__init__.py")):
        sys.exit(f"tiny_llama_model.py: {args.gguf_py} is not llama.cpp's gguf-py folder")
    if not os.path.isfile(args.vocab):
        sys.exit(f"tiny_llama_model.py: the vocabulary {args.vocab} does not exist")
    sys.path.insert(0, args.gguf_py)
    import gguf

    vocab = vocabulary(gguf, args.vocab)
    write_model(gguf, np, vocab, args.out)
    digest = sha256(args.out)
    if args.self_check:
        with tempfile.TemporaryDirectory() as scratch:
            again = os.path.join(scratch, "again.gguf")
            write_model(gguf, np, vocab, again)
            if sha256(again) != digest:
                sys.exit("tiny_llama_model.py: two runs made different files; the generator is not deterministic")
    print(f"{digest}  {args.out}")


if __name__ == "__main__":
    main()
