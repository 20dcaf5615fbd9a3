"""The teaching layer: what the chapters use besides the package itself. It stands above the
commands, and nothing else in the package imports it; it is installed with the package, so
that the chapters' `from annotated.notebooks import ...` works wherever the package does.

    chapter      the chapters' bookkeeping: show source, check against the NumPy reference,
                 save figures, the quick and full forms, the training settings table
    plots        the figures of chapters 1-5: softmax saturation, masks, heads, positions, sizes
    training_plots  the figures of chapters 6-9: batches, label smoothing, the learning rate,
                 learning curves, the beam tree, the ablation table, shards
    diagrams     the paper's Figures 1 and 2 (the architecture, the two attentions), drawn
    path_length  Table 1's path-length column, counted on each layer type's connections
    results      chapter 8's and the appendix's tables, read from the results files that the
                 experiment scripts wrote
"""
