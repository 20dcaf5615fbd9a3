"""Training (§5): the machinery behind `python -m annotated.train`.

    loop         the training loop, read top to bottom: data, model, Adam, steps, checkpoints
    step         one optimizer step: forward, label-smoothed loss, backward; the Engine that
                 wraps the model for DDP, torch.compile, CUDA graphs and mixed precision
    decoder_states  the forward pass up to the output projection, with the attention masks
                 that let the fused kernels run (is_causal for the decoder's self-attention)
    output_loss  the output projection and the label-smoothed loss fused, in chunks of tokens
    dropout      dropout on a CPU with its random numbers drawn four elements at a time
    onednn       the linear layers' and the output loss's matrix products on a CPU, through
                 oneDNN, whose kernels use the processor's widest instructions
    buckets      batches padded up to a few shapes, for CUDA graphs
    state        where a run is (step, data position, clock, RNG streams): a checkpoint's
                 `training`, to and from a dict
    resume       the checks a resumed run passes: its saved state, its data, its position
    divergence   when a loss has diverged, and which checkpoint is the last good one
    distributed  one process or many under torchrun (NCCL on GPUs, gloo on CPUs)
    run_dir      the run folder: its lock, its metrics log, its checkpoints (one run, rotation)
    rng          the random streams a checkpoint saves, so that a resumed run continues exactly
    meter        the progress bar, metric lines and clocks; the lines' printer
    machine      memory enough for the model, deterministic kernels, freed CPU memory kept
    flops        floating-point operations counted from the model's shapes: MFU, Table 2
"""
