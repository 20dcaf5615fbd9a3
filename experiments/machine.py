"""The machine a measurement was made on, as the results files record it."""
import os
import platform
from pathlib import Path

import torch


def machine_record() -> dict:
    """The machine a measurement was made on: its CPU and cores, torch; with a GPU, the GPU,
    its memory, CUDA and cuDNN."""
    record = {"torch": torch.__version__, "python": platform.python_version(),
              "cpu": cpu_name(), "cores": os.cpu_count()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        record.update(gpu=torch.cuda.get_device_name(0),
                      gpu_memory_GiB=round(props.total_memory / 2 ** 30, 1),
                      multiprocessors=props.multi_processor_count, cuda=torch.version.cuda,
                      cudnn=torch.backends.cudnn.version())
    return record


def cpu_name() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
