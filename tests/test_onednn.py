"""Training's matrix products on a CPU run through oneDNN (annotated.training.onednn): the
same numbers as nn.Linear and `@` up to the order of float additions, the same weights, and
the plain path wherever oneDNN does not apply."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from annotated import configs
from annotated.model import EncoderDecoder
from annotated.training import onednn
from annotated.training.onednn import OneDNNLinear, linear, matmul, use_onednn_linear
from annotated.training.step import make_engine

pytestmark = pytest.mark.skipif(not onednn.AVAILABLE, reason="this torch has no oneDNN")


def twins(d_in=16, d_out=9, bias=True):
    """An nn.Linear and a OneDNNLinear with the same weights."""
    torch.manual_seed(0)
    plain = nn.Linear(d_in, d_out, bias=bias)
    fast = nn.Linear(d_in, d_out, bias=bias)
    fast.load_state_dict(plain.state_dict())
    use_onednn_linear(fast)
    return plain, fast


@pytest.mark.parametrize("shape", [(3, 5, 16), (7, 16), (0, 16), (2, 0, 16)])
@pytest.mark.parametrize("bias", [True, False])
def test_a_onednn_linear_layer_gives_nn_linears_output_and_gradients(shape, bias):
    plain, fast = twins(bias=bias)
    assert type(fast) is OneDNNLinear
    x = torch.randn(shape, requires_grad=True)
    x_fast = x.detach().clone().requires_grad_()
    y, y_fast = plain(x), fast(x_fast)
    grad = torch.randn_like(y)
    y.backward(grad)
    y_fast.backward(grad)
    torch.testing.assert_close(y_fast, y)
    torch.testing.assert_close(x_fast.grad, x.grad)
    for mine, theirs in zip(fast.parameters(), plain.parameters()):
        torch.testing.assert_close(mine.grad, theirs.grad)


@pytest.mark.parametrize("a, b", [
    (torch.randn(7, 5), torch.randn(5, 3)),
    (torch.randn(5, 7).T, torch.randn(3, 5).T),                  # both transposed views
    (torch.randn(7, 10)[:, ::2], torch.randn(5, 3))])             # every other column
def test_products_of_strided_tensors_equal_torchs(a, b):
    torch.testing.assert_close(matmul(a, b), a @ b)
    torch.testing.assert_close(linear(a, b.T, torch.ones(3)), F.linear(a, b.T, torch.ones(3)))


def test_float64_and_autocast_take_torchs_own_path():
    plain, fast = twins()
    x = torch.randn(4, 16, dtype=torch.float64)
    assert torch.equal(fast.double()(x), plain.double()(x))      # the very same arithmetic
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert fast.float()(torch.randn(4, 16)).dtype == torch.bfloat16


def test_training_on_a_cpu_makes_every_linear_layer_onednn_with_its_weights_kept():
    config = configs.get("copy").override(N=1, d_model=32, d_ff=64, h=2)
    model = EncoderDecoder(config, 20)
    keys = {k: v.data_ptr() for k, v in model.state_dict().items()}
    make_engine(model, config, torch.device("cpu"))
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert linears and all(type(m) is OneDNNLinear for m in linears)
    assert {k: v.data_ptr() for k, v in model.state_dict().items()} == keys
    assert model.generator.weight is model.tgt_embed.lut.weight     # §3.4: still tied


def test_a_compiled_run_keeps_nn_linear():
    config = configs.get("copy").override(N=1, d_model=32, d_ff=64, h=2, compile=True)
    model = EncoderDecoder(config, 20)
    make_engine(model, config, torch.device("cpu"))
    assert all(type(m) is nn.Linear for m in model.modules() if isinstance(m, nn.Linear))
