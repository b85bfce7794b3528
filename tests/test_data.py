"""CIFAR-10 from a folder the tests write in torchvision's on-disk format, and the synthetic stand-in."""
from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from perfkit.errors import UsageError
from perfkit.workloads import data


def write_cifar10(root: Path, per_file: int = 20) -> np.ndarray:
    """A tiny CIFAR-10 laid out as torchvision leaves it: pickled dicts of uint8 rows and labels."""
    folder = root / data.CIFAR10_FOLDER
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    everything = []
    for name in (*data.CIFAR10_TRAIN_FILES, *data.CIFAR10_TEST_FILES):
        rows = rng.integers(0, 256, (per_file, 3072), dtype=np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, per_file)]
        with open(folder / name, "wb") as handle:
            pickle.dump({"batch_label": name, "labels": labels, "data": rows, "filenames": []}, handle)
        everything.append(rows)
    return np.concatenate(everything)


def test_reads_torchvisions_cifar10_layout(tmp_path):
    rows = write_cifar10(tmp_path)
    train = data.cifar10(tmp_path, train=True)
    test = data.cifar10(tmp_path, train=False)
    assert len(train) == 100 and len(test) == 20 and train.images.shape[1:] == (3, 32, 32)
    assert torch.equal(train.images[0].reshape(-1), torch.from_numpy(rows[0]))  # channel-major rows, as CIFAR
    assert train.source.startswith("cifar10:") and train.labels.dtype == torch.int64


def test_missing_or_corrupt_cifar10_says_what_to_do(tmp_path):
    with pytest.raises(UsageError, match="no CIFAR-10 at .*data_batch_1.*PERFKIT_DATA_ROOT"):
        data.cifar10(tmp_path)
    write_cifar10(tmp_path)
    (tmp_path / data.CIFAR10_FOLDER / "data_batch_3").write_bytes(b"not a pickle")
    with pytest.raises(UsageError, match="data_batch_3 is not a CIFAR-10 batch file"):
        data.cifar10(tmp_path)


def test_data_root_option_beats_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(tmp_path / "env"))
    assert data.data_root(None) == tmp_path / "env"
    assert data.data_root(str(tmp_path)) == tmp_path
    monkeypatch.delenv(data.DATA_ROOT_ENV)
    assert data.data_root(None) is None


def test_ranks_get_disjoint_shards_of_full_batches():
    images = data.synthetic_cifar10(100)
    seen = []
    for rank in range(2):
        batches = list(data.epoch_batches(images, 16, epoch=0, rank=rank, world=2))
        assert len(batches) == data.steps_per_epoch(100, 16, 2) == 3
        assert all(x.shape == (16, 3, 32, 32) and x.dtype == torch.float32 for x, _ in batches)
        seen.append({round(float(x.sum()), 3) for xb, _ in batches for x in xb})
    assert not seen[0] & seen[1]


def test_synthetic_data_is_learnable_not_noise():
    torch.manual_seed(0)
    train, test = data.synthetic_cifar10(2000, seed=0), data.synthetic_cifar10(500, seed=1)
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for epoch in range(3):
        for x, y in data.epoch_batches(train, 50, epoch):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    x, y = test.batch(torch.arange(len(test)))
    accuracy = float((model(x).argmax(1) == y).float().mean())
    assert accuracy > 0.5  # chance is 0.1
    assert not torch.equal(train.images[:500], test.images)


def test_a_size_keeps_the_first_images_of_real_or_synthetic_data(tmp_path):
    write_cifar10(tmp_path)
    assert len(data.cifar10(tmp_path, size=30)) == 30 and data.cifar10(tmp_path, size=30).source.endswith(
        "[:30]"
    )
    assert len(data.cifar10(tmp_path, size=10_000)) == 100
    assert len(data.cifar10(None, size=64)) == 64


def test_a_data_folder_asked_for_and_not_there_stops_the_run_at_once(pytester, tmp_path, monkeypatch):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    for args, env, message in (
            (["--perfkit-data-root="], None, "--perfkit-data-root is empty"),
            ([f"--perfkit-data-root={tmp_path / 'nowhere'}"], None, "holds no cifar-10-batches-py/"),
            ([], str(tmp_path), f"$PERFKIT_DATA_ROOT={tmp_path} holds no cifar-10-batches-py/")):
        if env is None:
            monkeypatch.delenv(data.DATA_ROOT_ENV, raising=False)
        else:
            monkeypatch.setenv(data.DATA_ROOT_ENV, env)
        result = pytester.runpytest("-p", "perfkit.plugin", "--perfkit-device=cpu", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert message in result.stderr.str() and "Traceback" not in result.stderr.str()


def test_more_loader_workers_than_cpus_is_said_once_in_perfkits_words(monkeypatch):
    import warnings

    monkeypatch.setattr(data.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = data.HostLoader(data.synthetic_cifar10(64), 16, torch.device("cpu"), workers=2)
        batches = sum(1 for _ in loader.epoch())
    ours = [w for w in caught if issubclass(w.category, data.OversubscribedWarning)]
    assert batches == 4 and len(ours) == 1 and "2 DataLoader workers on 1 CPU(s)" in str(ours[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data.HostLoader(data.synthetic_cifar10(64), 16, torch.device("cpu"), workers=1)
    assert not [w for w in caught if issubclass(w.category, data.OversubscribedWarning)]
