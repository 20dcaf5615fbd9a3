"""The position-wise feed-forward network (annotated.feedforward, equation 2)."""
import torch

from annotated.feedforward import PositionwiseFeedForward


def test_ffn_is_equation_2_applied_per_position():
    ffn = PositionwiseFeedForward(6, 10).double()
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    W1, b1, W2, b2 = ffn.W_1.weight.T, ffn.W_1.bias, ffn.W_2.weight.T, ffn.W_2.bias
    expected = torch.clamp(x @ W1 + b1, min=0) @ W2 + b2                    # eq. (2)
    assert torch.allclose(ffn(x), expected, rtol=0, atol=1e-14)
    # the same map at every position: equal to a kernel-size-1 convolution
    conv1 = torch.nn.functional.conv1d(x.transpose(1, 2), ffn.W_1.weight[:, :, None], b1)
    conv2 = torch.nn.functional.conv1d(conv1.relu(), ffn.W_2.weight[:, :, None], b2)
    assert torch.allclose(ffn(x), conv2.transpose(1, 2), rtol=0, atol=1e-13)
