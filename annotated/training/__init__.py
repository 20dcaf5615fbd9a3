"""Training (§5): the machinery behind `python -m annotated.train`.

    loop         the training loop, read top to bottom: data, model, Adam, steps, checkpoints
    step         one optimizer step: forward, label-smoothed loss, backward; the Engine that
                 wraps the model for DDP, torch.compile and mixed precision
    distributed  one process or many under torchrun (NCCL on GPUs, gloo on CPUs)
    checkpoint   the checkpoint file: atomic, sealed with a sha256, resumable, averageable
    run_dir      the run folder's lock and its metrics log
    meter        the progress bar, metric lines and clocks
    cpu_memory   on a CPU, freed memory kept for the next step (glibc): 15-20% less time a step
"""
