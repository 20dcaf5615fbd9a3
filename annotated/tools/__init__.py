"""Helpers that are not the paper: counting FLOPs, the chapters' notebook helpers, and the one
convention every command follows for its arguments and errors.

    flops        FLOPs from the model's shapes (model FLOP utilisation, Table 2)
    notebook     what the chapters call: show source, save figures, draw attention heads
    diagrams     the paper's Figures 1 and 2 (the architecture, the two attentions), drawn
    cli          main(argv=None), one `error: ...` line for a user's mistake, flag helpers
"""
