"""Using a trained model (§6.1): search, translation and scoring.

    search       greedy and beam search with the length penalty, cached incremental decoding,
                 attention maps
    batched      translating many sentences, batched by length
    bleu         sacreBLEU, and the paper's tokenized BLEU for comparison with its tables
"""
