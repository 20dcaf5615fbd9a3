"""Helpers that are not the paper: counting FLOPs, the chapters' notebook helpers, and the one
convention every command follows for its arguments and errors.

    flops        FLOPs from the model's shapes (model FLOP utilisation, Table 2)
    notebook     the chapters' bookkeeping: show source, check against the NumPy reference,
                 save figures, the settings table, quiet training runs, recorded metrics
    plots        the figures of chapters 1-5: softmax saturation, masks, heads, positions, sizes
    training_plots  the figures of chapters 6-9: batches, label smoothing, the learning rate,
                 learning curves, the beam tree, the ablation table, shards
    diagrams     the paper's Figures 1 and 2 (the architecture, the two attentions), drawn
    path_length  Table 1's path-length column, counted on each layer type's connections
    threads      one CPU thread for small models, in training and in decoding
    cli          main(argv=None), one `error: ...` line for a user's mistake, flag helpers
"""
