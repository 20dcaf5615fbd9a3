"""The data (§5.1): from text files to batches of token ids.

    datasets     the datasets a run can train on, and their languages: one table for the
                 settings and the data code
    tokenizer    the shared BPE vocabulary (sentencepiece); PAD/UNK/BOS/EOS = 0/1/2/3
    languages    which language a text with spaces is in, from its commonest words
    corpus       the copy task, Multi30k (full, or the sample shipped in sample/) and WMT14 as
                 token ids, with counts of everything dropped
    batching     batches by token count, shards for several processes and accumulation
    prepare_wmt14  downloads and prepares the paper's WMT14 English-German data
"""
