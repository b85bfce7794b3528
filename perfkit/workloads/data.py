"""Training data without downloads: CIFAR-10 from a local folder in torchvision's on-disk format, or
learnable synthetic images of the same shape that perfkit makes itself.

The whole set is held as one uint8 tensor (150 MB for CIFAR-10) and moved to the GPU once, so the
scaling and time-to-accuracy families time training, not a Python data loader. The seeds' random
crop and flip are left out for the same reason; the course's normalisation is kept. Shuffling and
sharding across ranks use torch's own ``DistributedSampler`` (with ``set_epoch``, seed 003 Q6).
"""
from __future__ import annotations

import functools
import os
import pickle
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
from torch.nn import functional
from torch.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset

from perfkit.errors import UsageError
from perfkit.workloads.shapes import CIFAR10_SHAPE

#: Where a user's local CIFAR-10 lives when ``--perfkit-data-root`` is not given.
DATA_ROOT_ENV = "PERFKIT_DATA_ROOT"
CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_TEST_FILES = ("test_batch",)
CIFAR10_CLASSES = 10
CIFAR10_CLASS_NAMES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)
CIFAR10_TRAIN_SIZE, CIFAR10_TEST_SIZE = 50_000, 10_000
#: The seeds' normalisation (seed 004): per-channel mean and standard deviation of CIFAR-10.
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2023, 0.1994, 0.2010)


@dataclass(frozen=True)
class ImageSet:
    """Images as uint8 (N, C, H, W) and int64 labels, on one device; ``source`` says where they came from."""

    images: torch.Tensor
    labels: torch.Tensor
    classes: int
    source: str

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def to(self, device: torch.device | str) -> ImageSet:
        return ImageSet(self.images.to(device), self.labels.to(device), self.classes, self.source)

    def batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Normalised float images and labels at ``index`` (on the set's device)."""
        return normalise(self.images[index]), self.labels[index]


@functools.cache
def _normalisation(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and std on ``device``, made once: a host-to-device copy per batch would sync the stream."""
    return (torch.tensor(CIFAR10_MEAN, device=device).view(1, -1, 1, 1),
            torch.tensor(CIFAR10_STD, device=device).view(1, -1, 1, 1))


def normalise(images: torch.Tensor) -> torch.Tensor:
    """uint8 images as the course's normalised floats, on their own device."""
    mean, std = _normalisation(images.device)
    return (images.float().div_(255) - mean) / std


def data_root(option: str | None) -> Path | None:
    """The local data folder: the command-line option, else ``$PERFKIT_DATA_ROOT``, else None (synthetic)."""
    chosen = option or os.environ.get(DATA_ROOT_ENV)
    return Path(chosen).expanduser() if chosen else None


def check_shifted_root(option: str | None) -> None:
    """Refuse, before anything runs, a folder of labelled images that was asked for and is not there."""
    if option is not None and not Path(option).expanduser().is_dir():
        raise UsageError(
            f"--perfkit-shifted-root={option} is not a folder: give one that holds {CIFAR10_FOLDER}/ or "
            "one folder per CIFAR-10 class, or leave the option out"
        )


def check_data_root(option: str | None) -> None:
    """Refuse, before anything runs, a data folder that was asked for and is not there: an empty option or a
    folder without CIFAR-10 would otherwise fall back to synthetic data without a word."""
    if option is not None and not option.strip():
        raise UsageError("--perfkit-data-root is empty: give the folder that holds "
                         f"{CIFAR10_FOLDER}/, or leave the option out for synthetic data")
    root = data_root(option)
    where = "--perfkit-data-root" if option else f"${DATA_ROOT_ENV}"
    if root is not None and not (root / CIFAR10_FOLDER).is_dir():
        raise UsageError(
            f"{where}={root} holds no {CIFAR10_FOLDER}/: give the folder that holds it (torchvision's "
            f"layout), or unset {where} for synthetic data"
        )


def cifar10(
    root: Path | None, train: bool = True, size: int | None = None, recipe: Recipe | None = None
) -> ImageSet:
    """CIFAR-10 from ``root`` when given (it must be there: no silent fallback), else the synthetic
    stand-in drawn by ``recipe`` (default :data:`EASY`); ``size`` keeps the first images (a quick
    profile), None keeps the whole split."""
    if root is None:
        default = CIFAR10_TRAIN_SIZE if train else CIFAR10_TEST_SIZE
        return synthetic_cifar10(size or default, seed=0 if train else 1, recipe=recipe or EASY)
    images = load_cifar10(root, train)
    if size is None or size >= len(images):
        return images
    return ImageSet(images.images[:size], images.labels[:size], images.classes, f"{images.source}[:{size}]")


def load_cifar10(root: Path, train: bool = True) -> ImageSet:
    """Read torchvision's CIFAR-10 python pickles (what ``CIFAR10(root, download=True)`` leaves on disk).

    Read directly rather than through ``torchvision.datasets.CIFAR10``: torchvision checks each
    file's md5 against the official release, so it cannot read a subset, and it yields PIL images
    one at a time where a benchmark wants one tensor.
    """
    folder = Path(root) / CIFAR10_FOLDER
    names = CIFAR10_TRAIN_FILES if train else CIFAR10_TEST_FILES
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise UsageError(
            f"no CIFAR-10 at {folder} (missing {', '.join(missing)}): give the folder that holds "
            f"{CIFAR10_FOLDER}/ (torchvision's format: torchvision.datasets.CIFAR10(root, download=True) "
            f"on a machine with internet), or leave --perfkit-data-root and ${DATA_ROOT_ENV} unset for "
            "synthetic data"
        )
    images, labels = [], []
    for name in names:
        try:
            with open(folder / name, "rb") as handle:
                entry = pickle.load(handle, encoding="latin1")
            images.append(torch.as_tensor(entry["data"], dtype=torch.uint8).reshape(-1, *CIFAR10_SHAPE))
            labels.append(torch.as_tensor(entry.get("labels", entry.get("fine_labels")), dtype=torch.int64))
        except (
            OSError,
            pickle.UnpicklingError,
            EOFError,
            KeyError,
            TypeError,
            RuntimeError,
            ValueError,
        ) as exc:
            raise UsageError(
                f"{folder / name} is not a CIFAR-10 batch file ({exc}); re-download it"
            ) from None
    return ImageSet(torch.cat(images), torch.cat(labels), CIFAR10_CLASSES, f"cifar10:{folder}")


def labelled_folder(root: Path) -> ImageSet:
    """A user's own labelled images (Problem 2.2's held-out set): CIFAR-10's layout (its test batch), or
    one folder per CIFAR-10 class named as the class (``cat/``, ``ship/``, …) of image files Pillow reads,
    resized to 32×32."""
    from PIL import Image, UnidentifiedImageError  # torchvision's own dependency; imported where it is used

    root = Path(root)
    if (root / CIFAR10_FOLDER).is_dir():
        return load_cifar10(root, train=False)
    folders = (
        sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        if root.is_dir()
        else []
    )
    unknown = [p.name for p in folders if p.name not in CIFAR10_CLASS_NAMES]
    if not folders or unknown:
        raise UsageError(f"{root} holds neither {CIFAR10_FOLDER}/ nor one folder per CIFAR-10 class"
                         + (f" (unknown: {', '.join(unknown)})" if unknown else "")
                         + f"; name the folders {', '.join(CIFAR10_CLASS_NAMES)}")
    images, labels = [], []
    for folder in folders:
        for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
            try:
                with Image.open(path) as image:
                    small = image.convert("RGB").resize(CIFAR10_SHAPE[:0:-1], Image.Resampling.BILINEAR)
            except (OSError, UnidentifiedImageError) as exc:
                raise UsageError(f"{path} is not an image Pillow can read ({exc})") from None
            pixels = torch.frombuffer(bytearray(small.tobytes()), dtype=torch.uint8)
            images.append(pixels.view(CIFAR10_SHAPE[1], CIFAR10_SHAPE[2], 3).permute(2, 0, 1))
            labels.append(CIFAR10_CLASS_NAMES.index(folder.name))
    if not images:
        raise UsageError(f"no images under {root}'s class folders")
    return ImageSet(torch.stack(images), torch.tensor(labels), CIFAR10_CLASSES, f"folder:{root}")


@dataclass(frozen=True)
class Recipe:
    """How perfkit's synthetic CIFAR-shaped set is drawn (see :func:`synthetic_cifar10`)."""

    name: str
    signal: tuple[float, float] = (0.15, 0.45)  # the class pattern's contrast, drawn per image
    clutter: float = 0.8  # weight of the label-free nuisance pattern
    noise: float = 0.5  # per-pixel noise
    nuisance_seed: int = 54321  # which pool of nuisance patterns
    channel_gain: tuple[float, float, float] = (1.0, 1.0, 1.0)  # a colour cast over the whole image


#: The default set (scaling, memory and batch benchmarks: the data's values do not matter there).
EASY = Recipe("synthetic")
#: Harder: fainter class patterns under more clutter, so reaching a target takes several epochs
#: (the time-to-accuracy and large-batch families measure training, not start-up).
HARD = Recipe("synthetic-hard", signal=(0.05, 0.25), clutter=1.0, noise=0.7)
#: The recipes by name, for job specs that cross a process boundary as JSON.
RECIPES = {recipe.name: recipe for recipe in (EASY, HARD)}


def shifted(recipe: Recipe) -> Recipe:
    """The same classes under another distribution (Problem 2.2's held-out set): nuisance patterns the
    model never saw, more noise and a colour cast."""
    return Recipe(f"{recipe.name}-shifted", recipe.signal, recipe.clutter, recipe.noise * 1.3, 777,
                  (1.15, 0.95, 0.85))


def synthetic_cifar10(size: int, seed: int = 0, recipe: Recipe = EASY) -> ImageSet:
    """CIFAR-shaped images a network can learn, but only over several epochs.

    Each class has a fixed low-frequency colour pattern (8×8 noise upsampled to 32×32). An image is
    its class's pattern at a faint random contrast (``recipe.signal``), under a stronger nuisance pattern
    drawn from a pool that carries no label, plus per-pixel noise. Train and test sets share the
    patterns and differ in their draws (``seed``).
    """
    patterns = _smooth_patterns(CIFAR10_CLASSES, pattern_seed=12345)
    nuisance = _smooth_patterns(64, pattern_seed=recipe.nuisance_seed)
    gain = torch.tensor(recipe.channel_gain).view(1, -1, 1, 1)
    gen = torch.Generator().manual_seed(1000 + seed)
    labels = torch.randint(0, CIFAR10_CLASSES, (size,), generator=gen)
    images = torch.empty(size, *CIFAR10_SHAPE, dtype=torch.uint8)
    for start in range(0, size, 1024):
        part = labels[start:start + 1024]
        n = len(part)
        contrast = torch.empty(n, 1, 1, 1).uniform_(*recipe.signal, generator=gen)
        clutter = nuisance[torch.randint(0, len(nuisance), (n,), generator=gen)]
        mixed = (contrast * patterns[part] + recipe.clutter * clutter
                 + recipe.noise * torch.randn(n, *CIFAR10_SHAPE, generator=gen)) * gain
        images[start:start + n] = (mixed * 48 + 128).clamp_(0, 255).to(torch.uint8)
    source = f"{recipe.name}:seed={seed}" if recipe != EASY else f"synthetic:seed={seed}"
    return ImageSet(images, labels, CIFAR10_CLASSES, source)


def _smooth_patterns(count: int, pattern_seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(pattern_seed)
    coarse = torch.randn(count, CIFAR10_SHAPE[0], 8, 8, generator=gen)
    smooth = functional.interpolate(coarse, size=CIFAR10_SHAPE[1:], mode="bilinear", align_corners=False)
    return smooth / smooth.std()


def epoch_batches(data: ImageSet, batch: int, epoch: int, rank: int = 0, world: int = 1,
                  seed: int = 0) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """This rank's shuffled shard of one epoch in full batches (a partial last batch is dropped, so
    every step has the shape the timing warmed up for)."""
    sampler: DistributedSampler[int] = DistributedSampler(
        cast(Dataset[int], range(len(data))), num_replicas=world, rank=rank, shuffle=True, seed=seed)
    sampler.set_epoch(epoch)
    order = torch.tensor(list(sampler), device=data.images.device)
    for start in range(0, len(order) - batch + 1, batch):
        yield data.batch(order[start:start + batch])


class OversubscribedWarning(UserWarning):
    """A DataLoader asked for more worker processes than the host has CPUs."""


class HostLoader:
    """Epochs through one ``DataLoader`` from host memory (seed 004's path: per-image indexing, collation in
    ``workers`` processes, optionally pinned pages), each batch copied to ``device`` and normalised there;
    full batches only, as :func:`epoch_batches`. The workers persist across epochs, so their start-up
    is not inside a timed epoch; each epoch is a new shuffle."""

    def __init__(
        self,
        data: ImageSet,
        batch: int,
        device: torch.device,
        workers: int = 4,
        pin_memory: bool = True,
        seed: int = 0,
    ) -> None:
        self.device = device
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if workers > cpus:  # said once here, where torch's DataLoader says it at two places of each epoch
            warnings.warn(f"{workers} DataLoader workers on {cpus} CPU(s): they take turns on the cores, so "
                          "this variant's epochs time an oversubscribed host", OversubscribedWarning,
                          stacklevel=2)
        self.loader = DataLoader(TensorDataset(data.images, data.labels), batch_size=batch, shuffle=True,
                                 drop_last=True, num_workers=workers, persistent_workers=workers > 0,
                                 pin_memory=pin_memory and device.type == "cuda",
                                 generator=torch.Generator().manual_seed(seed))

    def epoch(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for images, labels in self.loader:
            yield (
                normalise(images.to(self.device, non_blocking=True)),
                labels.to(self.device, non_blocking=True),
            )


def steps_per_epoch(size: int, batch: int, world: int = 1) -> int:
    """Full batches per rank in one epoch (``DistributedSampler`` pads the shards to equal length)."""
    return -(-size // world) // batch
