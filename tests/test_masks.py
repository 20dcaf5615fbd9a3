"""Masks (annotated.masks): True means attend."""
import torch

from annotated.masks import batch_masks, padding_mask, subsequent_mask, target_mask

PAD = 0


def test_mask_convention_true_means_attend():
    tokens = torch.tensor([[5, 6, PAD]])
    assert padding_mask(tokens, PAD).tolist() == [[[[True, True, False]]]]
    assert subsequent_mask(3)[0, 0].tolist() == [[True, False, False], [True, True, False],
                                                 [True, True, True]]
    assert target_mask(tokens, PAD).shape == (1, 1, 3, 3)


def test_batch_masks_are_the_encoder_and_decoder_masks():
    src, tgt = torch.tensor([[5, 6, PAD]]), torch.tensor([[2, 7, PAD, PAD]])
    src_mask, tgt_mask = batch_masks(src, tgt, PAD)
    assert torch.equal(src_mask, padding_mask(src, PAD)) and src_mask.shape == (1, 1, 1, 3)
    assert torch.equal(tgt_mask, target_mask(tgt, PAD)) and tgt_mask.shape == (1, 1, 4, 4)
