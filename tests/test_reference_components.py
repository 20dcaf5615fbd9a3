"""Every hand-written backward in reference_numpy/ against central finite differences of its
own forward, in float64.

Norm: for each tensor, relative error = max |numeric - analytic| / max |analytic| over its
entries (reference_numpy.gradcheck.relative_error), required <= 1e-6. One exception, stated
where it arises: the gradient of a key-projection bias b_K is zero in exact arithmetic (adding
q.b_K to every score of a row leaves the softmax unchanged), so it cannot be compared
relatively; both sides must instead be zero to rounding, relative to the largest gradient of
the check.
"""
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from conftest import says

from reference_numpy import layers
from reference_numpy.attention import attention_backward, attention_forward
from reference_numpy.decoder import decoder_layer_backward, decoder_layer_forward
from reference_numpy.embeddings import embedding_backward, embedding_forward
from reference_numpy.encoder import encoder_layer_backward, encoder_layer_forward
from reference_numpy.feedforward import feedforward_backward, feedforward_forward
from reference_numpy.gradcheck import numerical_grad, relative_error
from reference_numpy.loss import (label_smoothed_backward, label_smoothed_forward,
                                  label_smoothed_logits_backward)
from reference_numpy.masks import padding_mask, subsequent_mask, target_mask
from reference_numpy.multihead import multihead_backward, multihead_forward
from reference_numpy.positional import learned_backward, learned_forward, sinusoidal_forward
from reference_numpy.sublayer import sublayer_backward, sublayer_forward

TOLERANCE = 1e-6
ZERO_IN_EXACT_ARITHMETIC = ".W_K.bias"


def check_gradients(f, arrays, analytic):
    """f() -> scalar, reading `arrays` (perturbed in place); analytic: the same keys."""
    assert set(analytic) == set(arrays)
    largest = max(np.abs(g).max() for g in analytic.values())
    for name, x in arrays.items():
        numeric = numerical_grad(f, x)
        exact = np.asarray(analytic[name]).reshape(-1)
        if name.endswith(ZERO_IN_EXACT_ARITHMETIC):
            assert np.abs(exact).max() <= 1e-12 * largest, name
            assert np.abs(numeric).max() <= 1e-6 * largest, name
        else:
            assert relative_error(numeric, exact) <= TOLERANCE, name


def randn(rng, *shape):
    return rng.standard_normal(shape)


def dropout_mask(rng, shape, p=0.3):
    """0 where dropped, 1 / (1 - p) where kept."""
    return (rng.random(shape) >= p) / (1.0 - p)


def attention_params(rng, name, d_model, h, d_k, d_v):
    shapes = {"W_Q": (h * d_k, d_model), "W_K": (h * d_k, d_model), "W_V": (h * d_v, d_model),
              "W_O": (d_model, h * d_v)}
    params = {}
    for W, shape in shapes.items():
        params[f"{name}.{W}.weight"] = randn(rng, *shape) / np.sqrt(shape[1])
        params[f"{name}.{W}.bias"] = 0.1 * randn(rng, shape[0])
    return params


def ffn_params(rng, name, d_model, d_ff):
    return {f"{name}.W_1.weight": randn(rng, d_ff, d_model) / np.sqrt(d_model),
            f"{name}.W_1.bias": 0.1 * randn(rng, d_ff),
            f"{name}.W_2.weight": randn(rng, d_model, d_ff) / np.sqrt(d_ff),
            f"{name}.W_2.bias": 0.1 * randn(rng, d_model)}


def norm_params(rng, name, d_model):
    return {f"{name}.norm.weight": 1.0 + 0.1 * randn(rng, d_model),
            f"{name}.norm.bias": 0.1 * randn(rng, d_model)}


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    rng = np.random.default_rng(0)
    a = {"x": randn(rng, 2, 3, 4), "W": randn(rng, 5, 4)}
    if bias:
        a["b"] = randn(rng, 5)
    R = randn(rng, 2, 3, 5)
    out, cache = layers.linear_forward(a["x"], a["W"], a.get("b"))
    dx, dW, db = layers.linear_backward(R, cache)
    analytic = {"x": dx, "W": dW, **({"b": db} if bias else {})}
    check_gradients(lambda: (layers.linear_forward(a["x"], a["W"], a.get("b"))[0] * R).sum(),
                    a, analytic)


def test_relu():
    rng = np.random.default_rng(1)
    x = randn(rng, 3, 7)
    x += np.sign(x) * 0.1                           # keep the kink out of the step's reach
    R = randn(rng, 3, 7)
    out, cache = layers.relu_forward(x)
    check_gradients(lambda: (layers.relu_forward(x)[0] * R).sum(), {"x": x},
                    {"x": layers.relu_backward(R, cache)})


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_and_log_softmax(name):
    rng = np.random.default_rng(2)
    forward = getattr(layers, f"{name}_forward")
    x = 5 * randn(rng, 2, 3, 6) + 300.0             # large logits: the max-shift matters
    R = randn(rng, 2, 3, 6)
    out, cache = forward(x)
    assert np.isfinite(out).all()
    check_gradients(lambda: (forward(x)[0] * R).sum(), {"x": x},
                    {"x": getattr(layers, f"{name}_backward")(R, cache)})


def test_softmax_of_masked_scores_is_exactly_zero_with_zero_gradient():
    rng = np.random.default_rng(3)
    x = randn(rng, 4, 5)
    x[:, 3] = -np.inf
    p, cache = layers.softmax_forward(x)
    assert (p[:, 3] == 0.0).all() and np.allclose(p.sum(-1), 1.0)
    assert (layers.softmax_backward(randn(rng, 4, 5), cache)[:, 3] == 0.0).all()


def test_layer_norm():
    rng = np.random.default_rng(4)
    a = {"x": 3 * randn(rng, 2, 3, 6) + 1.0, "gamma": 1 + 0.1 * randn(rng, 6),
         "beta": randn(rng, 6)}
    R = randn(rng, 2, 3, 6)
    out, cache = layers.layer_norm_forward(a["x"], a["gamma"], a["beta"])
    dx, dgamma, dbeta = layers.layer_norm_backward(R, cache)
    check_gradients(lambda: (layers.layer_norm_forward(a["x"], a["gamma"], a["beta"])[0] * R).sum(),
                    a, {"x": dx, "gamma": dgamma, "beta": dbeta})


def test_dropout_with_explicit_mask():
    rng = np.random.default_rng(5)
    x, mask, R = randn(rng, 3, 8), dropout_mask(rng, (3, 8)), randn(rng, 3, 8)
    out, cache = layers.dropout_forward(x, mask)
    assert (out[mask == 0] == 0).all() and np.allclose(out[mask > 0], x[mask > 0] / 0.7)
    check_gradients(lambda: (layers.dropout_forward(x, mask)[0] * R).sum(), {"x": x},
                    {"x": layers.dropout_backward(R, cache)})
    with pytest.raises(ValueError) as error:
        layers.dropout_forward(x, mask[:, :4])
    says(error, "dropout mask", "shape")


def test_embedding_shared_by_three_uses():
    """One table E as source embedding, target embedding and output projection (§3.4):
    its gradient is the sum of the three contributions."""
    rng = np.random.default_rng(6)
    E = randn(rng, 7, 4) / 2
    src, tgt = np.array([[1, 4, 4, 2]]), np.array([[3, 4, 0]])
    R_src, R_tgt, R_out = randn(rng, 1, 4, 4), randn(rng, 1, 3, 4), randn(rng, 1, 3, 7)

    def f():
        e_src, e_tgt = embedding_forward(src, E)[0], embedding_forward(tgt, E)[0]
        logits = layers.linear_forward(e_tgt, E)[0]
        return (e_src * R_src).sum() + (e_tgt * R_tgt).sum() + (logits * R_out).sum()

    e_src, src_cache = embedding_forward(src, E)
    assert np.allclose(e_src[0, 1], 2.0 * E[4])     # sqrt(d_model) = 2
    e_tgt, tgt_cache = embedding_forward(tgt, E)
    _, out_cache = layers.linear_forward(e_tgt, E)
    d_e_tgt, dE_out, _ = layers.linear_backward(R_out, out_cache)
    dE_src = embedding_backward(R_src, src_cache)
    assert (dE_src[[0, 3, 5, 6]] == 0).all()        # tokens absent from the source
    dE = dE_src + embedding_backward(R_tgt + d_e_tgt, tgt_cache) + dE_out
    check_gradients(f, {"E": E}, {"E": dE})


def test_positional_encodings():
    rng = np.random.default_rng(7)
    x, R = randn(rng, 2, 5, 6), randn(rng, 2, 5, 6)
    assert np.allclose(sinusoidal_forward(np.zeros((1, 3, 6)))[0, :, 0], np.sin([0, 1, 2]))
    # sinusoids: a constant is added, so d f / d x = R
    check_gradients(lambda: (sinusoidal_forward(x) * R).sum(), {"x": x}, {"x": R})
    a = {"x": x, "P": randn(rng, 8, 6)}
    out, cache = learned_forward(a["x"], a["P"])
    dx, dP = learned_backward(R, cache)
    check_gradients(lambda: (learned_forward(a["x"], a["P"])[0] * R).sum(), a, {"x": dx, "P": dP})
    with pytest.raises(ValueError) as error:
        learned_forward(x, a["P"][:4])
    says(error, "learned positions", "cover 4")


def attention_masks():
    """A padding mask (second sentence: last two keys padding) and a causal one."""
    tokens = np.array([[5, 6, 7, 8], [5, 6, 0, 0]])
    return {"padding": padding_mask(tokens, 0), "causal": subsequent_mask(4),
            "target": target_mask(tokens, 0)}


@pytest.mark.parametrize("kind", ["padding", "causal", "target"])
@pytest.mark.parametrize("with_dropout", [False, True])
def test_attention(kind, with_dropout):
    rng = np.random.default_rng(8)
    mask = attention_masks()[kind]
    a = {"q": randn(rng, 2, 3, 4, 5), "k": randn(rng, 2, 3, 4, 5), "v": randn(rng, 2, 3, 4, 2)}
    drop = dropout_mask(rng, (2, 3, 4, 4)) if with_dropout else None
    R = randn(rng, 2, 3, 4, 2)
    out, cache = attention_forward(a["q"], a["k"], a["v"], mask, drop)
    dq, dk, dv = attention_backward(R, cache)
    check_gradients(lambda: (attention_forward(a["q"], a["k"], a["v"], mask, drop)[0] * R).sum(),
                    a, {"q": dq, "k": dk, "v": dv})


def test_masked_positions_get_exactly_zero_weight_and_gradient():
    rng = np.random.default_rng(9)
    mask = attention_masks()["target"]              # (2, 1, 4, 4): causal and padding
    q, k, v = randn(rng, 2, 3, 4, 5), randn(rng, 2, 3, 4, 5), randn(rng, 2, 3, 4, 2)
    out, cache = attention_forward(q, k, v, mask)
    weights = cache[0]
    assert (weights[~np.broadcast_to(mask, weights.shape)] == 0.0).all()
    dq, dk, dv = attention_backward(randn(rng, 2, 3, 4, 2), cache)
    assert (dk[1, :, 2:] == 0.0).all() and (dv[1, :, 2:] == 0.0).all()   # padding keys
    v2 = v.copy()
    v2[1, :, 2:] = 1e6                              # what padding keys hold cannot leak
    assert (attention_forward(q, k, v2, mask)[0] == out).all()


@pytest.mark.parametrize("h, d_k, d_v", [(2, 3, 5), (1, 4, 4)])
@pytest.mark.parametrize("with_dropout", [False, True])
def test_multihead_cross_attention(h, d_k, d_v, with_dropout):
    """Queries and keys of different lengths, padding in the keys; d_k != d_v."""
    rng = np.random.default_rng(10)
    params = attention_params(rng, "attn", 6, h, d_k, d_v)
    x = {"query": randn(rng, 2, 3, 6), "key": randn(rng, 2, 4, 6), "value": randn(rng, 2, 4, 6)}
    mask = attention_masks()["padding"]
    drops = {"attn.dropout": dropout_mask(rng, (2, h, 3, 4))} if with_dropout else None
    R = randn(rng, 2, 3, 6)

    def f():
        return (multihead_forward(params, "attn", x["query"], x["key"], x["value"], mask, h,
                                  drops)[0] * R).sum()

    out, cache = multihead_forward(params, "attn", x["query"], x["key"], x["value"], mask, h, drops)
    dquery, dkey, dvalue, grads = multihead_backward(R, cache)
    check_gradients(f, {**x, **params}, {"query": dquery, "key": dkey, "value": dvalue, **grads})


def test_feedforward():
    rng = np.random.default_rng(11)
    params = ffn_params(rng, "ffn", 4, 7)
    x, R = {"x": randn(rng, 2, 3, 4)}, randn(rng, 2, 3, 4)
    drops = {"ffn.dropout": dropout_mask(rng, (2, 3, 7))}
    out, cache = feedforward_forward(params, "ffn", x["x"], drops)
    dx, grads = feedforward_backward(R, cache)
    check_gradients(lambda: (feedforward_forward(params, "ffn", x["x"], drops)[0] * R).sum(),
                    {**x, **params}, {"x": dx, **grads})


def test_sublayer_connection():
    """LayerNorm(x + Dropout(fx)) with fx = tanh(x) standing in for the sublayer."""
    rng = np.random.default_rng(12)
    params = norm_params(rng, "sub", 5)
    x, R = {"x": randn(rng, 2, 3, 5)}, randn(rng, 2, 3, 5)
    drops = {"sub.dropout": dropout_mask(rng, (2, 3, 5))}

    def f():
        return (sublayer_forward(params, "sub", x["x"], np.tanh(x["x"]), drops)[0] * R).sum()

    out, cache = sublayer_forward(params, "sub", x["x"], np.tanh(x["x"]), drops)
    dx, dfx, grads = sublayer_backward(R, cache)
    dx = dx + dfx * (1 - np.tanh(x["x"]) ** 2)
    check_gradients(f, {**x, **params}, {"x": dx, **grads})


def layer_dropout_masks(rng, name, sublayers, attentions, shapes):
    """Masks for every dropout site of one layer, named like annotated's modules."""
    masks = {f"{name}.sublayers.{i}.dropout": dropout_mask(rng, shapes["out"])
             for i in range(sublayers)}
    masks[f"{name}.ffn.dropout"] = dropout_mask(rng, shapes["ffn"])
    for attn in attentions:
        masks[f"{name}.{attn}.dropout"] = dropout_mask(rng, shapes[attn])
    return masks


def test_encoder_layer():
    rng = np.random.default_rng(13)
    d_model, h, d_k, d_v, d_ff, name = 6, 2, 3, 4, 8, "encoder.layers.0"
    params = {**attention_params(rng, f"{name}.self_attn", d_model, h, d_k, d_v),
              **ffn_params(rng, f"{name}.ffn", d_model, d_ff),
              **norm_params(rng, f"{name}.sublayers.0", d_model),
              **norm_params(rng, f"{name}.sublayers.1", d_model)}
    x, R = {"x": randn(rng, 2, 4, d_model)}, randn(rng, 2, 4, d_model)
    mask = attention_masks()["padding"]
    drops = layer_dropout_masks(rng, name, 2, ["self_attn"],
                                {"out": (2, 4, d_model), "ffn": (2, 4, d_ff),
                                 "self_attn": (2, h, 4, 4)})
    out, cache = encoder_layer_forward(params, name, x["x"], mask, h, drops)
    dx, grads = encoder_layer_backward(R, cache)
    check_gradients(lambda: (encoder_layer_forward(params, name, x["x"], mask, h, drops)[0]
                             * R).sum(), {**x, **params}, {"x": dx, **grads})


def test_decoder_layer():
    rng = np.random.default_rng(14)
    d_model, h, d_k, d_v, d_ff, name = 6, 2, 3, 4, 8, "decoder.layers.0"
    params = {**attention_params(rng, f"{name}.self_attn", d_model, h, d_k, d_v),
              **attention_params(rng, f"{name}.src_attn", d_model, h, d_k, d_v),
              **ffn_params(rng, f"{name}.ffn", d_model, d_ff),
              **{k: v for i in range(3) for k, v in
                 norm_params(rng, f"{name}.sublayers.{i}", d_model).items()}}
    x = {"y": randn(rng, 2, 3, d_model), "memory": randn(rng, 2, 4, d_model)}
    R = randn(rng, 2, 3, d_model)
    src_mask = attention_masks()["padding"]
    tgt_mask = target_mask(np.array([[2, 5, 6], [2, 5, 0]]), 0)
    drops = layer_dropout_masks(rng, name, 3, ["self_attn", "src_attn"],
                                {"out": (2, 3, d_model), "ffn": (2, 3, d_ff),
                                 "self_attn": (2, h, 3, 3), "src_attn": (2, h, 3, 4)})

    def f():
        return (decoder_layer_forward(params, name, x["y"], x["memory"], src_mask, tgt_mask, h,
                                      drops)[0] * R).sum()

    out, cache = decoder_layer_forward(params, name, x["y"], x["memory"], src_mask, tgt_mask, h,
                                       drops)
    dy, dmemory, grads = decoder_layer_backward(R, cache)
    check_gradients(f, {**x, **params}, {"y": dy, "memory": dmemory, **grads})


@pytest.mark.parametrize("eps_ls", [0.0, 0.1])
def test_label_smoothed_loss(eps_ls):
    rng = np.random.default_rng(15)
    logits = randn(rng, 2, 3, 7)
    target = np.array([[4, 5, 3], [6, 3, 0]])       # one padding position
    a = {"log_p": layers.log_softmax_forward(logits)[0]}
    loss, cache = label_smoothed_forward(a["log_p"], target, 0, eps_ls)

    def smoothed_target(y):                         # 1 - eps on y, eps / (V - 2) elsewhere
        q = np.full(7, eps_ls / 5)
        q[0], q[y] = 0.0, 1.0 - eps_ls
        return q

    expected = np.mean([-(smoothed_target(y) * a["log_p"][i, j]).sum()
                        for (i, j), y in np.ndenumerate(target) if y != 0])
    assert np.isclose(loss, expected, rtol=1e-14)
    check_gradients(lambda: label_smoothed_forward(a["log_p"], target, 0, eps_ls)[0], a,
                    {"log_p": label_smoothed_backward(cache)})
    # the fused gradient with respect to the logits, (softmax - q) / n
    z = {"logits": logits}

    def f():
        return label_smoothed_forward(layers.log_softmax_forward(z["logits"])[0], target, 0,
                                      eps_ls)[0]

    check_gradients(f, z, {"logits": label_smoothed_logits_backward(cache)})
    assert (label_smoothed_logits_backward(cache)[1, 2] == 0).all()     # the padding position


def test_reference_numpy_never_imports_torch():
    package = pathlib.Path(__file__).resolve().parents[1] / "reference_numpy"
    offenders = [f"{path.name}:{n}" for path in sorted(package.glob("*.py"))
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if line.lstrip().startswith(("import torch", "from torch"))]
    assert offenders == [], f"torch imported in reference_numpy/: {offenders}"
    code = "import sys, reference_numpy; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
