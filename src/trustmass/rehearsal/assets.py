"""What kvpress's hub-only presses download, made for the rehearsal's small models under the names kvpress asks for.

``kvzap``          ``KVzapPress.post_init_from_model``: ``KVzapModel.from_pretrained("nvidia/KVzap-mlp-<name>")``,
                   ``<name>`` the last part of ``model.config.name_or_path`` (one scorer MLP per layer, the layer's
                   input hidden state to one score per KV head).
``fastkvzip``      ``FastKVzipPress.post_init_from_model``: ``hf_hub_download("Jang-Hyun/Fast-KVzip",
                   "<name lower>/q<group>_dim16_sink16.pt")`` (one gate per layer, ``{"module": [state_dict, ...]}``),
                   and ``AutoConfig.from_pretrained(name_or_path)`` for the group size.
``duo_attention``  with on-the-fly head scores (:mod:`trustmass.deploy.roster`): ``load_dataset("kmfoda/booksum",
                   split="train")`` (:func:`trustmass.rehearsal.data.booksum_rows`) and the model's tokenizer.

The weights are random (seeded by the name): they prove that the press finds, loads and runs them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["FASTKVZIP_REPO", "fastkvzip_file", "kvzap_repo", "write_fastkvzip_gates", "write_kvzap"]

FASTKVZIP_REPO = "Jang-Hyun/Fast-KVzip"
BOOKSUM = "kmfoda/booksum"


def kvzap_repo(name_or_path: str, kind: str = "mlp") -> str:
    """The repository ``KVzapPress`` (``model_type = kind``) loads for a model called ``name_or_path``."""
    return f"nvidia/KVzap-{kind}-{name_or_path.split('/')[-1]}"


def fastkvzip_file(name_or_path: str, group: int) -> str:
    """The gate file ``FastKVzipPress`` downloads (``kvpress.presses.fastkvzip_press.get_gate_id``)."""
    return f"{name_or_path.split('/')[-1].lower()}/q{group}_dim16_sink16.pt"


def _seed(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:4], "little")


def write_kvzap(folder: Path, repo: str, *, hidden: int, kv_heads: int, layers: int, mlp_hidden: int = 32) -> Path:
    import torch
    from kvpress.presses.kvzap_press import KVzapConfig, KVzapModel

    torch.manual_seed(_seed(repo))
    config = KVzapConfig(input_dim=hidden, output_dim=kv_heads, n_modules=layers, hidden_dim=mlp_hidden)
    KVzapModel(config).save_pretrained(folder)
    return folder


def write_fastkvzip_gates(path: Path, name: str, *, hidden: int, kv_heads: int, group: int, layers: int, dtype) -> Path:
    import torch
    from kvpress.presses.fastkvzip_press import FastKVzipGate

    torch.manual_seed(_seed(name))
    gates = []
    for index in range(layers):
        gate = FastKVzipGate(index, hidden, kv_heads, group, dtype, output_dim=16, sink=16)
        with torch.no_grad():
            gate.k_base.normal_(0.0, 1.0)
            gate.b.normal_(0.0, 1.0)
        gates.append({k: v.detach().clone() for k, v in gate.state_dict().items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"module": gates}, path)
    return path
