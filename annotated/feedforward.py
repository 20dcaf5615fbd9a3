"""Position-wise feed-forward network, equation (2) of §3.3:

    FFN(x) = max(0, x W_1 + b_1) W_2 + b_2

The same two matrices act on every position separately: two convolutions with kernel size 1.
The paper puts no dropout inside the FFN; `ffn_dropout` (after the ReLU, default 0) is a
separate knob for experiments.
"""
from torch import nn


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model: int, d_ff: int, ffn_dropout: float = 0.0):
        super().__init__()
        self.W_1 = nn.Linear(d_model, d_ff)
        self.W_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(ffn_dropout)

    def forward(self, x):                                   # (batch, seq, d_model)
        return self.W_2(self.dropout(self.W_1(x).relu()))   # (batch, seq, d_model)
