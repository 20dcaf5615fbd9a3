"""Helpers that are not the paper: counting FLOPs, the chapters' notebook helpers, and the one
convention every command follows for its arguments and errors.

    flops        FLOPs from the model's shapes (model FLOP utilisation, Table 2)
    notebook     what the chapters call: show source, save figures, draw attention heads, the
                 training chapters' settings table, quiet training runs and figures
    diagrams     the paper's Figures 1 and 2 (the architecture, the two attentions), drawn
    path_length  Table 1's path-length column, counted on each layer type's connections
    threads      one CPU thread for small models, in training and in decoding
    cli          main(argv=None), one `error: ...` line for a user's mistake, flag helpers
"""
