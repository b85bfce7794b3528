"""Time to accuracy (perfkit.workloads.tta), its data (hard and shifted synthetic sets, a user's folder) and
report."""

from __future__ import annotations

import json

import pytest
import torch
from PIL import Image

from perfkit.errors import UsageError
from perfkit.render import report
from perfkit.resultfile.payloads import TimeToAccuracy
from perfkit.workloads import data, tta
from tests.conftest import ROOT, typed

CPU = torch.device("cpu")
QUICK = tta.Variant(batch=64)


@pytest.fixture(scope="module")
def sets():
    return (
        data.synthetic_cifar10(1024, seed=0, recipe=data.HARD),
        data.synthetic_cifar10(256, seed=1, recipe=data.HARD),
        data.synthetic_cifar10(256, seed=2, recipe=data.shifted(data.HARD)),
    )


def test_a_reached_target_counts_training_and_evaluation(sets):
    train, valid, shifted = sets
    lines: list[str] = []
    run = tta.train_to_target("tiny-cnn", train, valid, 0.3, 10, CPU, variant=QUICK, shifted=shifted,
                              progress=lines.append)
    assert run.reached and run.accuracies[-1] >= 0.3 > max(run.accuracies[:-1], default=0)
    assert run.tta_s == pytest.approx(run.train_s + run.eval_s, abs=0.5) and run.eval_s > 0
    assert run.epochs == len(lines) and "ETA" in lines[-1] and "target 30%" in lines[-1]
    assert run.images == run.epochs * (len(train) // 64) * 64 and 0 <= run.shifted_accuracy <= 1


def test_a_target_out_of_reach_is_recorded_not_hung(sets):
    train, valid, _ = sets
    run = tta.train_to_target("tiny-cnn", train, valid, 1.0, 2, CPU, variant=QUICK, progress=lambda _: None)
    assert not run.reached and run.tta_s is None and run.epochs == 2 and run.shifted_accuracy is None


def test_a_deterministic_variant_trains_with_cudnns_deterministic_algorithms_and_restores_the_process(
        sets, monkeypatch):
    """The nightly's variant: cuDNN deterministic and its autotuner off while it trains (seen from inside a
    step), the process's own flags back afterwards; a seed then repeats its accuracies run after run."""
    cudnn = torch.backends.cudnn
    monkeypatch.setattr(cudnn, "deterministic", False)
    monkeypatch.setattr(cudnn, "benchmark", True)
    seen: list[tuple[bool, bool]] = []
    real_step = tta._step

    def watched_step(*args):
        seen.append((cudnn.deterministic, cudnn.benchmark))
        real_step(*args)

    monkeypatch.setattr(tta, "_step", watched_step)
    variant = tta.Variant(batch=64, deterministic=True)
    train, valid, _ = sets
    runs = [tta.train_to_target("tiny-cnn", train, valid, 1.0, 2, CPU, seed=3, variant=variant,
                                progress=lambda _: None) for _ in range(2)]
    assert seen and set(seen) == {(True, False)}
    assert (cudnn.deterministic, cudnn.benchmark) == (False, True)
    assert runs[0].accuracies == runs[1].accuracies
    seen.clear()
    tta.train_to_target("tiny-cnn", train, valid, 1.0, 1, CPU, variant=QUICK, progress=lambda _: None)
    assert set(seen) == {(False, True)}  # the other variants leave the process's choice alone
    assert tta.VARIANTS["resident-batch512-deterministic"] == tta.Variant(
        "resident-batch512-deterministic", resident=True, batch=512, deterministic=True)


@pytest.mark.parametrize(
    ("target", "batch", "message"), [(1.5, 64, "fraction"), (0.5, 4096, "exceeds the training")]
)
def test_bad_targets_and_batches_say_so(sets, target, batch, message):
    with pytest.raises(UsageError, match=message):
        tta.train_to_target("tiny-cnn", sets[0], sets[1], target, 1, CPU, variant=tta.Variant(batch=batch))


def test_the_coefficient_of_variation_is_coleman_et_als():
    assert tta.cov([9.0, 10.0, 11.0]) == pytest.approx(0.1)
    with pytest.raises(UsageError, match="two runs"):
        tta.cov([10.0])


def test_the_hard_set_takes_longer_to_learn_and_the_shifted_one_is_another_distribution():
    easy, hard = (data.synthetic_cifar10(1024, seed=0, recipe=r) for r in (data.EASY, data.HARD))
    one_epoch = {}
    for name, train in (("easy", easy), ("hard", hard)):
        valid = data.synthetic_cifar10(256, seed=1, recipe=data.EASY if name == "easy" else data.HARD)
        one_epoch[name] = tta.train_to_target("tiny-cnn", train, valid, 1.0, 2, CPU, variant=QUICK,
                                              progress=lambda _: None).accuracies[-1]
    assert one_epoch["hard"] < one_epoch["easy"]
    shifted = data.synthetic_cifar10(256, seed=1, recipe=data.shifted(data.HARD))
    same = data.synthetic_cifar10(256, seed=1, recipe=data.HARD)
    assert torch.equal(shifted.labels, same.labels) and not torch.equal(shifted.images, same.images)
    assert shifted.source.startswith("synthetic-hard-shifted")


def test_a_folder_per_class_is_read_and_resized(tmp_path):
    for name, colour in (("cat", 10), ("ship", 200)):
        (tmp_path / name).mkdir()
        Image.new("RGB", (48, 40), (colour, colour, colour)).save(tmp_path / name / "a.png")
    images = data.labelled_folder(tmp_path)
    assert images.images.shape == (2, 3, 32, 32) and images.labels.tolist() == [3, 8]
    assert images.images[1].float().mean() == pytest.approx(200, abs=1)


def test_a_folder_that_is_not_labelled_images_says_how_to_name_it(tmp_path):
    (tmp_path / "kitten").mkdir()
    with pytest.raises(UsageError, match="unknown: kitten.*airplane, automobile"):
        data.labelled_folder(tmp_path)
    with pytest.raises(UsageError, match="neither"):
        data.labelled_folder(tmp_path / "missing")


def test_a_quick_run_reports_each_variant_against_the_naive_loop(tmp_path):
    results = typed(json.loads((ROOT / "tests" / "data" / "cpu-tta.json").read_text()))
    by_variant = {rec.variant: b for b, rec in results.family(TimeToAccuracy)}
    ratio = (by_variant["naive"].value("images_per_s") or 0) / (
        by_variant["resident"].value("images_per_s") or 1
    )
    assert by_variant["resident"].value("images_per_s_vs_naive") == pytest.approx(1 / ratio)
    text = report.write_report(results, tmp_path).read_text()
    assert (
        "| tiny-cnn | resident | 128 | 3/3 |" in text and "## Time to accuracy (seed 002 Problem 2)" in text
    )
    assert (tmp_path / "time_to_accuracy.png").stat().st_size > 10_000


def test_a_run_past_its_schedule_keeps_the_last_rate_and_a_warm_up_trains_untimed(sets):
    train, valid, _ = sets
    tta.warm_up("tiny-cnn", QUICK, CPU, steps=2)
    run = tta.train_to_target("tiny-cnn", train, valid, 1.0, 3, CPU, variant=QUICK, progress=lambda _: None,
                              schedule_epochs=1)
    assert run.epochs == 3 and not run.reached  # epochs 2 and 3 ran past the one-epoch schedule without error


def test_hidden_files_beside_the_images_are_left_alone_and_a_missing_folder_stops_the_run(tmp_path, pytester):
    (tmp_path / "cat").mkdir()
    Image.new("RGB", (32, 32)).save(tmp_path / "cat" / "a.png")
    (tmp_path / "cat" / ".DS_Store").write_bytes(b"\0")
    (tmp_path / ".cache").mkdir()
    assert data.labelled_folder(tmp_path).labels.tolist() == [3]
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest(
        "-p", "perfkit.plugin", "--perfkit-device=cpu", f"--perfkit-shifted-root={tmp_path}/no"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "is not a folder" in result.stderr.str()


def test_the_crossing_is_interpolated_between_the_evaluations_around_it():
    run = tta.Run(0, True, 10.0, 9.0, 1.0, 3, (0.5, 0.9, 0.97), 100, None, (3.0, 6.0, 9.0))
    assert run.crossing_s(0.96) == pytest.approx(6.0 + 3.0 * 0.06 / 0.07)  # not the 9 s of the whole epoch
    assert run.crossing_s(0.2) == pytest.approx(1.2)  # from no accuracy at no training
    unreached = tta.Run(0, False, None, 9.0, 1.0, 3, (0.5, 0.6, 0.7), 100, None, (3.0, 6.0, 9.0))
    assert unreached.crossing_s(0.96) is None
    # no training times per evaluation
    older = tta.Run(0, True, 10.0, 9.0, 1.0, 3, (0.5, 0.9, 0.97), 100, None)
    assert older.crossing_s(0.96) is None
