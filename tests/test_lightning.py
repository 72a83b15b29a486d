"""PyTorch Lightning trains on a fastdata loader as it is: it moves each epoch through `set_epoch` of the sampler
of what it iterates, and a loader is its own `sampler` (fastdata/closing.py). Before, Lightning never called
`set_epoch`, and every training epoch of an image loader came in epoch 0's order, crops and flips. An evaluation
loader passes Lightning's checks of a sampler (its `batch_sampler` is None, as a DataLoader of batches has)."""

from __future__ import annotations

import logging

import pytest
import torch
from conftest_kinds import IMAGES, KINDS, kinds_data_fixture, make_loader  # noqa: F401  (the kinds_data fixture)
from conftest_text import fortunes_tokens_fixture  # noqa: F401  (the fortunes_tokens fixture)

pl = pytest.importorskip("pytorch_lightning")


class _Recorder(pl.LightningModule):
    """Records what identifies each batch, epoch by epoch; learns nothing (the loss is a zero with a gradient)."""

    def __init__(self, ident) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.ident = ident
        self.by_epoch: dict[int, list] = {}

    @property
    def epochs(self) -> list[list]:
        return [self.by_epoch[e] for e in sorted(self.by_epoch)]

    def training_step(self, batch, index):
        self.by_epoch.setdefault(self.current_epoch, []).append(self.ident(batch))
        return self.weight.sum() * 0.0

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


@pytest.mark.parametrize("kind", KINDS)
def test_every_epoch_of_a_lightning_fit_is_a_new_epoch(kind, kinds_data, fortunes_tokens,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    loader, ident = make_loader(kind, kinds_data, fortunes_tokens)
    model = _Recorder(ident)
    trainer = pl.Trainer(max_epochs=3, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, limit_train_batches=4)
    with caplog.at_level(logging.WARNING, logger="fastdata"):
        trainer.fit(model, train_dataloaders=loader)
    assert loader.state_dict()["epoch"] == 2
    assert len(model.epochs) == 3 and all(model.epochs)
    assert model.epochs[0] != model.epochs[1] != model.epochs[2]
    assert not [r for r in caplog.records if "read again" in r.getMessage()]
    assert loader.sampler is loader


class _Evaluated(_Recorder):
    """Counts the real rows (label >= 0) of each validation pass."""

    def __init__(self) -> None:
        super().__init__(lambda batch: None)
        self.validated: list[int] = []

    def on_validation_epoch_start(self) -> None:
        self.validated.append(0)

    def validation_step(self, batch, index) -> None:
        self.validated[-1] += int((batch[1] >= 0).sum())


def test_a_validation_loader_is_read_whole_every_epoch(kinds_data) -> None:
    """Lightning's evaluation loop read `batch_sampler` of what has a `sampler`, and failed on its absence."""
    import fastdata

    train = fastdata.loader(kinds_data["wds"], **IMAGES)
    val = fastdata.loader(kinds_data["wds"], split="val", **{**IMAGES, "train": False})
    model = _Evaluated()
    trainer = pl.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=1)
    trainer.fit(model, train_dataloaders=train, val_dataloaders=val)
    assert model.validated == [2, 7, 7]  # the sanity check's one batch of 2, then the 7 val samples each epoch
    assert val.batch_sampler is None


@pytest.mark.parametrize("kind", ["images", "text"])
def test_a_checkpoint_taken_mid_epoch_resumes_at_the_next_batch(kind, kinds_data, fortunes_tokens, tmp_path) -> None:
    """Lightning saves the state of an iterable that has `state_dict` in its checkpoints and loads it on resume: a
    fit resumed from a checkpoint taken after 3 steps goes on with the uninterrupted fit's fourth batch."""
    from pytorch_lightning.callbacks import ModelCheckpoint

    kw = dict(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False,
              max_epochs=2, limit_train_batches=5)
    loader, ident = make_loader(kind, kinds_data, fortunes_tokens)
    whole = _Recorder(ident)
    saved = ModelCheckpoint(dirpath=tmp_path, every_n_train_steps=3, save_top_k=-1, filename="{step}")
    pl.Trainer(callbacks=[saved], **kw).fit(whole, train_dataloaders=loader)
    loader, ident = make_loader(kind, kinds_data, fortunes_tokens)
    resumed = _Recorder(ident)
    pl.Trainer(enable_checkpointing=False, **kw).fit(resumed, train_dataloaders=loader,
                                                     ckpt_path=tmp_path / "step=3.ckpt")
    assert [len(e) for e in whole.epochs] == [5, 5]
    assert resumed.epochs == [whole.epochs[0][3:], whole.epochs[1]]
