"""What a trained model is stored in.

    checkpoint_file  the checkpoint: written atomically and sealed with a sha256, loaded with
                     its config and tokenizer, averaged (§6.1), halved to float16
"""
