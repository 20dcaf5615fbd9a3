"""A trained model shipped with the project, so that every reader can translate and look at
trained attention without an hour of training: Multi30k English->German, its weights stored in
float16 (README.md in this folder says how it was made and how well it translates).

    from annotated.pretrained import MULTI30K_EN_DE
    from annotated.store.checkpoint_file import load_model
    model, config, tokenizer = load_model(MULTI30K_EN_DE)     # float32 model, eval mode

or from the shell: python -m annotated.translate --checkpoint annotated/pretrained/multi30k_en_de.pt
"""
from pathlib import Path

MULTI30K_EN_DE = Path(__file__).resolve().parent / "multi30k_en_de.pt"
