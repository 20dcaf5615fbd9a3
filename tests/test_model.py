"""The model of §3: parameter counts, equivalence with torch.nn.Transformer, causality,
padding, weight tying, presets."""
import pytest
import torch
from torch import nn

import annotated
from annotated import EncoderDecoder, batch_masks, configs, count_parameters, make_model
from annotated.masks import padding_mask, subsequent_mask, target_mask

PAD = 0


def tiny(**kw):
    args = dict(N=2, d_model=16, d_ff=32, h=4, P_drop=0.0)
    args.update(kw)
    return make_model(13, **args).double()             # one shared vocabulary of 13


def padded_batch(vocab=13, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (3, 7), generator=g)
    tgt = torch.randint(4, vocab, (3, 6), generator=g)
    src[0, 5:] = PAD
    src[2, 3:] = PAD
    tgt[1, 4:] = PAD
    tgt[2, 2:] = PAD
    return src, tgt


# --- parameter counts (exact without embeddings; Table 3's column with V = 37,000) ---

def meta_count(name, vocab=37_000, embeddings=True):
    with torch.device("meta"):
        return count_parameters(EncoderDecoder(configs.get(name), vocab), embeddings=embeddings)


def test_parameter_counts_without_embeddings_are_exact():
    assert meta_count("base", embeddings=False) == 44_138_496
    assert meta_count("big", embeddings=False) == 176_357_376


@pytest.mark.parametrize("name,paper", [("base", 65e6), ("big", 213e6)])
def test_parameter_counts_with_shared_vocabulary_are_near_the_paper(name, paper):
    assert abs(meta_count(name) - paper) <= 2.5e6


# --- equivalence with PyTorch's own implementation ---

def torch_transformer_from(model, d_model, h, d_ff, N):
    """nn.Transformer's stacks (post-LN, norm=None, dropout 0) holding our model's weights."""
    enc_layer = nn.TransformerEncoderLayer(d_model, h, d_ff, dropout=0.0, batch_first=True)
    dec_layer = nn.TransformerDecoderLayer(d_model, h, d_ff, dropout=0.0, batch_first=True)
    ref = nn.Transformer(d_model, h, custom_encoder=nn.TransformerEncoder(enc_layer, N, norm=None,
                                                                          enable_nested_tensor=False),
                         custom_decoder=nn.TransformerDecoder(dec_layer, N, norm=None),
                         batch_first=True).double()

    def copy_attn(dst, src):
        dst.in_proj_weight.data = torch.cat([src.W_Q.weight, src.W_K.weight, src.W_V.weight]).clone()
        dst.in_proj_bias.data = torch.cat([src.W_Q.bias, src.W_K.bias, src.W_V.bias]).clone()
        dst.out_proj.weight.data = src.W_O.weight.clone()
        dst.out_proj.bias.data = src.W_O.bias.clone()

    def copy_common(dst, src, norms):
        for name in ("weight", "bias"):
            getattr(dst.linear1, name).data = getattr(src.ffn.W_1, name).clone()
            getattr(dst.linear2, name).data = getattr(src.ffn.W_2, name).clone()
            for norm, sub in zip(norms, src.sublayers):
                getattr(norm, name).data = getattr(sub.norm, name).clone()

    for dst, src in zip(ref.encoder.layers, model.encoder.layers):
        copy_attn(dst.self_attn, src.self_attn)
        copy_common(dst, src, [dst.norm1, dst.norm2])
    for dst, src in zip(ref.decoder.layers, model.decoder.layers):
        copy_attn(dst.self_attn, src.self_attn)
        copy_attn(dst.multihead_attn, src.src_attn)
        copy_common(dst, src, [dst.norm1, dst.norm2, dst.norm3])
    return ref


@pytest.mark.parametrize("fast", [True, False])
def test_matches_torch_nn_transformer_in_float64(fast):
    d_model, h, d_ff, N = 32, 4, 64, 2
    model = make_model(13, 13, N=N, d_model=d_model, d_ff=d_ff, h=h, P_drop=0.0).double()
    for m in model.attention_modules():
        m.fast = fast
    ref = torch_transformer_from(model, d_model, h, d_ff, N)
    src, tgt = padded_batch()
    src_mask, tgt_mask = batch_masks(src, tgt, PAD)

    memory = model.encode(src, src_mask)
    out = model.decode(memory, src_mask, tgt, tgt_mask)

    x = model.src_pos(model.src_embed(src))            # the same embedded inputs for both
    y = model.tgt_pos(model.tgt_embed(tgt))
    # nn.Transformer's masks say True = blocked: the opposite of ours.
    ref_memory = ref.encoder(x, src_key_padding_mask=~src_mask[:, 0, 0])
    ref_out = ref.decoder(y, ref_memory, tgt_mask=~subsequent_mask(tgt.size(1))[0, 0],
                          tgt_key_padding_mask=tgt == PAD,
                          memory_key_padding_mask=~src_mask[:, 0, 0])
    real_src = src != PAD                               # nn.Transformer's padded rows are arbitrary
    assert (memory - ref_memory)[real_src].abs().max() <= 1e-10
    assert (out - ref_out)[tgt != PAD].abs().max() <= 1e-10


# --- masking ---


@pytest.mark.parametrize("fast", [True, False])
def test_decoder_is_causal(fast):
    """Changing target tokens after position i leaves decoder outputs at positions <= i unchanged."""
    model = tiny()
    for m in model.attention_modules():
        m.fast = fast
    src, tgt = padded_batch()
    tgt[:, :] = torch.randint(4, 13, tgt.shape)        # no padding: only the causal mask acts
    src_mask = padding_mask(src, PAD)
    memory = model.encode(src, src_mask)
    out = model.decode(memory, src_mask, tgt, target_mask(tgt, PAD))
    for i in range(tgt.size(1) - 1):
        changed = tgt.clone()
        changed[:, i + 1:] = torch.randint(4, 13, changed[:, i + 1:].shape)
        out2 = model.decode(memory, src_mask, changed, target_mask(changed, PAD))
        assert torch.equal(out[:, :i + 1], out2[:, :i + 1]), f"position <= {i} saw the future"
        assert not torch.equal(out[:, i + 1:], out2[:, i + 1:])


def test_padding_keys_get_exactly_zero_weight():
    model = tiny()
    for m in model.attention_modules():
        m.record_weights = True
    src, tgt = padded_batch()
    model(src, tgt, *batch_masks(src, tgt, PAD))
    src_pad = (src == PAD)[:, None, None, :]            # (batch, 1, 1, src_len)
    tgt_pad = (tgt == PAD)[:, None, None, :]
    for layer in model.encoder.layers:
        w = layer.self_attn.weights
        assert torch.all(w.masked_select(src_pad.expand_as(w)) == 0)
        assert torch.allclose(w.sum(-1), torch.ones((), dtype=w.dtype))
    for layer in model.decoder.layers:
        w = layer.src_attn.weights
        assert torch.all(w.masked_select(src_pad.expand_as(w)) == 0)
        w = layer.self_attn.weights
        assert torch.all(w.masked_select(tgt_pad.expand_as(w)) == 0)
        assert torch.all(w.masked_select(~subsequent_mask(tgt.size(1))) == 0)


# --- weight tying ---

def test_two_vocabularies_of_equal_size_are_not_tied_unless_asked():
    """Equal sizes are no shared vocabulary: the default ties only one given vocabulary."""
    model = make_model(13, 13, N=1, d_model=8, d_ff=16, h=2)
    assert model.tgt_embed is not model.src_embed
    assert model.generator.weight is not model.src_embed.lut.weight
    tied = make_model(13, 13, tie_embeddings=True, N=1, d_model=8, d_ff=16, h=2)
    assert tied.generator.weight is tied.src_embed.lut.weight


def test_tied_weights_are_one_tensor_with_one_gradient():
    model = tiny()
    shared = model.src_embed.lut.weight
    assert model.tgt_embed.lut.weight is shared and model.generator.weight is shared
    assert count_parameters(model) == count_parameters(model, embeddings=False) + shared.numel()

    untied = tiny(tie_embeddings=False)
    untied.load_state_dict({k: v for k, v in model.state_dict().items()}, strict=False)
    for w in (untied.src_embed.lut.weight, untied.tgt_embed.lut.weight, untied.generator.weight):
        w.data.copy_(shared.data)
    src, tgt = padded_batch()
    for m in (model, untied):
        m(src, tgt, *batch_masks(src, tgt, PAD)).sum().backward()
    expected = (untied.src_embed.lut.weight.grad + untied.tgt_embed.lut.weight.grad
                + untied.generator.weight.grad)
    for g in (untied.src_embed.lut.weight.grad, untied.tgt_embed.lut.weight.grad,
              untied.generator.weight.grad):
        assert g.abs().sum() > 0                        # each of the three uses contributes
    assert torch.allclose(shared.grad, expected, rtol=1e-12, atol=1e-12)


def test_separate_vocabularies_get_separate_matrices():
    model = make_model(11, 17, N=1, d_model=8, d_ff=16, h=2)
    assert model.src_embed is not model.tgt_embed
    assert model.generator.weight is not model.tgt_embed.lut.weight
    assert model.generator.weight.shape == (17, 8)
    with pytest.raises(ValueError, match="shared vocabulary"):
        make_model(11, 17, tie_embeddings=True)


def test_separate_d_k_and_d_v():
    model = make_model(13, 13, N=1, d_model=16, d_ff=32, h=2, d_k=3, d_v=5)
    attn = model.encoder.layers[0].self_attn
    assert attn.W_Q.weight.shape == (6, 16) and attn.W_V.weight.shape == (10, 16)
    assert attn.W_O.weight.shape == (16, 10)
    src, tgt = padded_batch()
    assert model(src, tgt, *batch_masks(src, tgt, PAD)).shape == (3, 6, 13)


# --- presets ---


def test_build_from_preset_and_package_interface():
    model = annotated.EncoderDecoder(annotated.configs.get("C4").override(N=1), 50)
    assert model.encoder.layers[0].self_attn.d_k == 32 and len(model.encoder.layers) == 1
    src, tgt = padded_batch(vocab=50)
    memory = model.encode(src, padding_mask(src, PAD))
    assert memory.shape == (3, 7, 256)
    assert model.decode(memory, padding_mask(src, PAD), tgt, target_mask(tgt, PAD)).shape == (3, 6, 256)
