"""Training's forward pass (annotated.training.decoder_states, .buckets): the decoder's
self-attention as `is_causal` without a padding mask, and batches padded up to buckets for
CUDA graphs. Each is held to the model's own forward pass with annotated.masks and the plain
loss: in float64 the same loss, token counts and gradients, to rounding.

Norm: loss relative difference <= 1e-12; every parameter gradient, max |diff| / max |plain| <=
1e-12, except the key biases b^K, whose gradient is zero in exact arithmetic (adding q.b^K to a
row of scores leaves the softmax unchanged): there both sides must be below 1e-12 of the
model's largest gradient."""
import numpy as np
import pytest
import torch

from annotated import configs
from annotated.base.errors import ConfigError
from annotated.data.batching import collate
from annotated.data.tokenizer import PAD
from annotated.loss import label_smoothed_loss
from annotated.masks import batch_masks
from annotated.model import EncoderDecoder
from annotated.training.buckets import Bucketed, bucket, padded_to
from annotated.training.decoder_states import DecoderStates
from annotated.training.output_loss import OutputLoss
from annotated.training.step import make_engine, train_step

V = 23


def model_and_pairs(seed=0, n=7):
    """A float64 model without dropout, and sentence pairs of 1 to 9 tokens a side, the first
    the longest on both, so that a batch of them has padding on both sides."""
    torch.manual_seed(seed)
    config = configs.get("copy").override(N=2, d_model=16, d_ff=32, h=2, d_k=8, d_v=8,
                                          P_drop=0.0, eps_ls=0.1)
    model = EncoderDecoder(config, V).double()
    gen = torch.Generator().manual_seed(seed)
    pairs = [tuple(torch.randint(4, V, (length,), generator=gen).numpy()
                   for length in torch.randint(1, 9, (2,), generator=gen).tolist())
             for _ in range(n - 1)]
    return model, config, [(np.full(9, 5), np.full(9, 6))] + pairs


def model_and_batch(seed=0, n=7):
    """model_and_pairs's model and config, and its pairs collated: (src, tgt_in, tgt_out)."""
    model, config, pairs = model_and_pairs(seed, n)
    return model, config, collate(pairs, list(range(n)))


def plain_loss_and_grads(model, src, tgt_in, tgt_out):
    """The chapters' forward pass: the model with batch_masks, the plain loss."""
    model.zero_grad()
    stats = label_smoothed_loss(model(src, tgt_in, *batch_masks(src, tgt_in, PAD)), tgt_out,
                                pad=PAD, eps_ls=0.1)
    (stats.loss / stats.tokens).backward()
    return stats, {name: p.grad.clone() for name, p in model.named_parameters()}


def training_loss_and_grads(model, net, src, tgt_in, tgt_out):
    model.zero_grad()
    stats = OutputLoss(model.generator)(net(src, tgt_in), tgt_out, pad=PAD, eps_ls=0.1)
    (stats.loss / stats.tokens).backward()
    return stats, {name: p.grad.clone() for name, p in model.named_parameters()}


def assert_same(ours, plain):
    (stats, grads), (stats0, grads0) = ours, plain
    assert abs(stats.loss.item() / stats0.loss.item() - 1) <= 1e-12
    assert stats.tokens.item() == stats0.tokens.item()
    assert stats.correct.item() == stats0.correct.item()
    largest = max(g.abs().max() for g in grads0.values())
    for name, g0 in grads0.items():
        if name.endswith("W_K.bias"):
            assert max(grads[name].abs().max(), g0.abs().max()) <= 1e-12 * largest, name
        else:
            assert (grads[name] - g0).abs().max() <= 1e-12 * g0.abs().max(), name


def test_causal_attention_without_a_padding_mask_gives_the_loss_and_gradients_of_the_full_mask():
    """Padded target positions see one another under is_causal alone, so their states differ
    from the full mask's; no real position sees them, and the loss leaves them out."""
    model, _, (src, tgt_in, tgt_out) = model_and_batch()
    assert (tgt_in == PAD).any() and (src == PAD).any()
    assert_same(training_loss_and_grads(model, DecoderStates(model), src, tgt_in, tgt_out),
                plain_loss_and_grads(model, src, tgt_in, tgt_out))
    with torch.no_grad():
        ours = DecoderStates(model)(src, tgt_in)
        src_mask, tgt_mask = batch_masks(src, tgt_in, PAD)
        full = model.decode(model.encode(src, src_mask), src_mask, tgt_in, tgt_mask)
    real = tgt_in != PAD
    assert torch.allclose(ours[real], full[real], rtol=0, atol=1e-12)
    assert not torch.allclose(ours[~real], full[~real], rtol=0, atol=1e-3)


def test_spelled_out_attention_gives_the_loss_and_gradients_of_the_fused_kernel():
    """spelled_out (a CPU under bf16 autocast) computes eq. (1) as matrix products with the
    causal mask as a tensor: in float64 the loss and every gradient are those of the plain
    forward pass, and no call reaches the fused kernel."""
    model, _, (src, tgt_in, tgt_out) = model_and_batch()
    states = DecoderStates(model, spelled_out=True)
    with torch.profiler.profile() as profile:
        ours = training_loss_and_grads(model, states, src, tgt_in, tgt_out)
    assert_same(ours, plain_loss_and_grads(model, src, tgt_in, tgt_out))
    assert not [e for e in profile.events() if "scaled_dot_product" in e.name]


def test_the_engine_spells_attention_out_on_a_cpu_under_bf16_autocast_only():
    from annotated.multihead import MultiHeadAttention
    for amp, spelled in (("bf16", True), ("none", False)):
        model, config, _ = model_and_batch()
        engine = make_engine(model.float(), config.override(amp=amp), torch.device("cpu"))
        assert engine.net.spelled_out is spelled
        assert all(layer.fast is not spelled for layer in model.modules()
                   if isinstance(layer, MultiHeadAttention))


def test_decoder_self_attention_reaches_the_kernel_as_is_causal_with_no_mask():
    """What the profiler sees reach F.scaled_dot_product_attention (its arguments: q, k, v,
    attn_mask, dropout_p, is_causal, ...), layer by layer: the encoder's and the cross
    attention's broadcast padding mask (batch, 1, 1, S); the decoder's self-attention with no
    mask, is_causal=True. Every call runs the CPU's fused (flash) kernel."""
    model, config, (src, tgt_in, _) = model_and_batch()
    with torch.profiler.profile(record_shapes=True) as profile:
        DecoderStates(model)(src, tgt_in)
    events = profile.events()
    calls = [(e.input_shapes[3], e.concrete_inputs[5]) for e in events
             if e.name == "aten::scaled_dot_product_attention"]
    padding, causal = ([len(src), 1, 1, src.size(1)], False), ([], True)
    assert calls == [padding] * config.N + [causal, padding] * config.N
    fused = [e for e in events if e.name == "aten::_scaled_dot_product_flash_attention_for_cpu"]
    assert len(fused) == 3 * config.N


@pytest.mark.parametrize("n, expected", [(1, 8), (8, 8), (9, 16), (64, 64), (65, 72), (127, 128),
                                         (129, 144), (200, 208), (256, 256), (657, 704)])
def test_buckets_are_multiples_of_8_and_eight_a_doubling_above_128(n, expected):
    assert bucket(n) == expected


def test_buckets_are_few_and_waste_at_most_an_eighth():
    sizes = range(1, 4097)
    assert all(bucket(bucket(n)) == bucket(n) >= n for n in sizes)
    assert all(bucket(n) <= bucket(n + 1) for n in sizes)
    assert len({bucket(n) for n in range(1, 257)}) == 24
    assert max(bucket(n) / n for n in range(65, 4097)) <= 1.125
    assert max(bucket(n) - n for n in range(1, 65)) == 7


def test_added_rows_are_empty_sentences_and_added_positions_padding():
    tokens = torch.tensor([[5, 6, 3], [7, 3, 0]])
    assert padded_to(tokens, 4, 5, start=3).tolist() == [[5, 6, 3, 0, 0], [7, 3, 0, 0, 0],
                                                        [3, 0, 0, 0, 0], [3, 0, 0, 0, 0]]


def test_padding_a_batch_to_its_bucket_changes_no_loss_token_count_or_gradient():
    """7 rows of up to 10 positions become 8 rows of 16: the same sums and gradients; the
    states come back in the batch's own shape, and the added rows compute nothing undefined."""
    model, _, (src, tgt_in, tgt_out) = model_and_batch(seed=1)
    assert (bucket(len(src)), bucket(src.size(1)), bucket(tgt_in.size(1))) != \
        (len(src), src.size(1), tgt_in.size(1))
    shapes = []
    states = DecoderStates(model)

    def net(s, t):
        shapes.append((tuple(s.shape), tuple(t.shape)))
        out = states(s, t)
        assert torch.isfinite(out).all()
        return out

    bucketed = training_loss_and_grads(model, Bucketed(net), src, tgt_in, tgt_out)
    assert shapes == [((8, 16), (8, 16))]
    assert_same(bucketed, training_loss_and_grads(model, states, src, tgt_in, tgt_out))
    assert_same(bucketed, plain_loss_and_grads(model, src, tgt_in, tgt_out))


def test_train_step_with_buckets_sums_the_same_as_without():
    """The statistics a step logs (loss, nll, correct, tokens, source tokens) through the
    engine, with the net padded to buckets and without."""
    model, config, pairs = model_and_pairs(seed=2)
    engine = make_engine(model, config, torch.device("cpu"))
    plain = train_step(engine, pairs, list(range(len(pairs))), config)
    engine.net = Bucketed(engine.net)
    model.zero_grad()
    padded = train_step(engine, pairs, list(range(len(pairs))), config)
    assert padded.tokens == plain.tokens and padded.source_tokens == plain.source_tokens
    assert padded.correct == plain.correct
    assert padded.loss == pytest.approx(plain.loss, rel=1e-12)
    assert padded.nll == pytest.approx(plain.nll, rel=1e-12)


@pytest.mark.parametrize("settings, names", [
    ({"cuda_graphs": True}, ["cuda_graphs", "compile = false"]),
    ({"cuda_graphs": True, "compile": True, "accum_steps": 2}, ["cuda_graphs", "accum_steps = 2"]),
])
def test_cuda_graphs_need_the_compiled_step_one_micro_batch_at_a_time(settings, names):
    with pytest.raises(ConfigError) as error:
        configs.get("sample").override(**settings)
    assert all(name in str(error.value) for name in names) and "cuda_graphs=false" in \
        str(error.value)


def test_cuda_graphs_without_a_gpu_is_refused_in_one_line(tmp_path, capsys):
    from annotated import train
    with pytest.raises(SystemExit) as exit_:
        train.main(["--config", "copy", "--run-dir", str(tmp_path / "run"), "--threads", "1",
                    "compile=true", "cuda_graphs=true"])
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and err.count("\n") == 1
    assert err.startswith("error: cuda_graphs=true needs a GPU") and "leave it false" in err
    assert not list((tmp_path / "run").glob("*.pt"))


def test_training_forward_pass_compiles_into_one_graph():
    """torch.compile traces DecoderStates whole: no graph break (a break would cut the compiled
    step in two, and its CUDA graphs with it)."""
    model, _, (src, tgt_in, _) = model_and_batch()
    explained = torch._dynamo.explain(DecoderStates(model.float()))(src, tgt_in)
    torch._dynamo.reset()
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), \
        [b.reason for b in explained.break_reasons]
